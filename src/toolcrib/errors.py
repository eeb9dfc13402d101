"""One error hierarchy for toolcrib; every error knows its in-band code (SPEC R-3.3).

```
ToolcribError                      (code: "internal")
├── InBandError                    an answer to a tool call, returned with ``isError: true``
│   ├── PermissionRequired         permission_required   (names the permission)
│   ├── ScopeRequired              scope_required        (names the scope)
│   ├── NotFound                   not_found
│   ├── Restricted                 restricted
│   ├── Forbidden                  forbidden
│   │   └── FrozenUnmet            forbidden             (held: a frozen parameter the tool lacks, R-13.8)
│   ├── ConnectionInactive         connection_inactive   (names the status)
│   ├── HandleExpired              handle_expired
│   ├── SchemaChanged              schema_changed
│   ├── NeedsInput                 needs_input           (lists the missing fields)
│   ├── InvalidArguments           invalid_arguments     (JSON-pointer errors)
│   ├── UpstreamError              upstream_error
│   │   ├── UpstreamAuthFailed     upstream_error        (the upstream refused the connection's credentials)
│   │   ├── UpstreamStopped        upstream_error        (the session ended under the request)
│   │   └── AddressRefused         upstream_error        (an address the gateway will not call, R-13.5)
│   ├── NeedsReauth                needs_reauth          (names the account and the URL to fix it)
│   ├── UpstreamTimeout            upstream_timeout
│   ├── RateLimited                rate_limited          (says when to retry: retry_after)
│   ├── ToolChanged                tool_changed          (the definition changed since it was accepted)
│   ├── Cancelled                  cancelled
│   ├── TooLarge                   too_large
│   ├── ApprovalRequired           approval_required     (names the approval id and link)
│   ├── ApprovalDeclined           approval_declined     (the member declined, or the approval is spent)
│   ├── ElicitationUnavailable     elicitation_unavailable (the upstream asked what the session cannot carry)
│   └── InternalError              internal_error        (carries an incident id found in the log)
├── CatalogError                   a catalog or a tool definition refused by the limits of R-4.2
│   ├── CatalogRefused             the whole catalog (size, tool count)
│   └── ToolRefused                one tool (schema size, depth, malformed)
├── Unauthenticated                no valid grant: HTTP 401 with WWW-Authenticate (R-2.4)
├── SignInRefused                  a sign-in at the identity provider refused (R-7.7, R-7.8): its code
│                                  is the OAuth/OIDC error name (RFC 6749 §4.1.2.1, §5.2), its reason why
├── ConfigError                    bad settings or bad command-line input
└── StoreError                     the database failed (translated from SQLAlchemy)
    └── StoreBusy                  store_busy            (also in-band: the lock outlasted the retries)
```

Library errors (sqlite3, SQLAlchemy, httpx2, the MCP SDK) are translated at the boundary with
``raise ... from exc`` and never leak out of a gateway function.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

__all__ = [
    "AddressRefused",
    "ApprovalDeclined",
    "ApprovalRequired",
    "Cancelled",
    "CatalogError",
    "CatalogRefused",
    "ConfigError",
    "ConnectionInactive",
    "ElicitationUnavailable",
    "Forbidden",
    "FrozenUnmet",
    "HandleExpired",
    "InBandError",
    "InternalError",
    "InvalidArguments",
    "NeedsInput",
    "NeedsReauth",
    "NotFound",
    "PermissionRequired",
    "RateLimited",
    "Restricted",
    "SchemaChanged",
    "ScopeRequired",
    "SignInRefused",
    "StoreBusy",
    "StoreError",
    "TooLarge",
    "ToolChanged",
    "ToolRefused",
    "ToolcribError",
    "Unauthenticated",
    "UpstreamAuthFailed",
    "UpstreamError",
    "UpstreamStopped",
    "UpstreamTimeout",
    "shown_host",
]


class ToolcribError(Exception):
    """The root of every error toolcrib raises on purpose."""

    code: ClassVar[str] = "internal"

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class InBandError(ToolcribError):
    """An error answered inside a ``tools/call`` result (R-3.3), never as a protocol error."""

    code: ClassVar[str] = "internal"

    def extra(self) -> dict[str, Any]:
        """Fields added next to ``code`` and ``message`` in the in-band error object."""
        return {}

    def to_payload(self) -> dict[str, Any]:
        """The ``{"error": {...}}`` structured content of the in-band answer."""
        return {"error": {"code": self.code, "message": self.message, **self.extra()}}


class PermissionRequired(InBandError):
    code: ClassVar[str] = "permission_required"

    def __init__(self, permission: str, message: str | None = None) -> None:
        super().__init__(message or f"this call needs the permission {permission!r}")
        self.permission = permission

    def extra(self) -> dict[str, Any]:
        return {"permission": self.permission}


class ScopeRequired(InBandError):
    code: ClassVar[str] = "scope_required"

    def __init__(self, scope: str, message: str | None = None) -> None:
        super().__init__(message or f"the grant lacks the scope {scope!r}")
        self.scope = scope

    def extra(self) -> dict[str, Any]:
        return {"scope": self.scope}


class NotFound(InBandError):
    code: ClassVar[str] = "not_found"


class Restricted(InBandError):
    code: ClassVar[str] = "restricted"


class Forbidden(InBandError):
    code: ClassVar[str] = "forbidden"


class FrozenUnmet(Forbidden):
    """The tool appeared without a parameter frozen for it (R-13.8): it is held, never run without
    the frozen value, until an admin unfreezes or fixes it. Names the parameters (never a value)."""

    def __init__(self, tool: str, params: list[str]) -> None:
        super().__init__(
            f"{tool} is held: it has no parameter {', '.join(map(repr, params))} frozen for it, so it "
            "does not run until an admin unfreezes or fixes the frozen value"
        )
        self.params = params

    def extra(self) -> dict[str, Any]:
        return {"frozen": self.params}


class ConnectionInactive(InBandError):
    code: ClassVar[str] = "connection_inactive"

    def __init__(self, account: str, status: str, reason: str | None = None) -> None:
        text = f"connection {account!r} is {status}"
        super().__init__(f"{text}: {reason}" if reason else text)
        self.status = status

    def extra(self) -> dict[str, Any]:
        return {"status": self.status}


class HandleExpired(InBandError):
    code: ClassVar[str] = "handle_expired"


class SchemaChanged(InBandError):
    code: ClassVar[str] = "schema_changed"


class NeedsInput(InBandError):
    code: ClassVar[str] = "needs_input"

    def __init__(self, missing: list[dict[str, Any]]) -> None:
        names = ", ".join(str(m["name"]) for m in missing)
        super().__init__(f"required input missing: {names}")
        self.missing = missing

    def extra(self) -> dict[str, Any]:
        return {"missing": self.missing}


class InvalidArguments(InBandError):
    code: ClassVar[str] = "invalid_arguments"

    def __init__(
        self,
        message: str,
        errors: list[dict[str, str]] | None = None,
        accepted: list[str] | None = None,
    ) -> None:
        super().__init__(message)
        self.errors = errors or []
        self.accepted = accepted

    def extra(self) -> dict[str, Any]:
        out: dict[str, Any] = {"errors": self.errors}
        if self.accepted is not None:
            out["accepted"] = self.accepted
        return out


class UpstreamError(InBandError):
    code: ClassVar[str] = "upstream_error"


class UpstreamStopped(UpstreamError):
    """The upstream's session ended under a request (its process died, its connection closed); the
    next request starts another. A read (``tools/list``) is tried once more on the new one."""


class UpstreamAuthFailed(UpstreamError):
    """The upstream answered 401/403 to the connection's own credentials: the connection needs reauth."""


_MAX_HOST_SHOWN = 253


def shown_host(host: str) -> str:
    """``host`` as an error names it: cut after 253 characters (the longest DNS name), so a
    hostile URL's megabyte of host name never reaches a message."""
    return host if len(host) <= _MAX_HOST_SHOWN else host[:_MAX_HOST_SHOWN] + "..."


class AddressRefused(UpstreamError):
    """A host the gateway will not call (R-13.5): link-local, cloud metadata, or private when the
    setting denies those (see ``toolcrib.addresses``). The message names the host and why, never
    more; refused before any connection is made. Creating a connection turns it into
    ``invalid_arguments`` at ``/url``."""

    def __init__(self, host: str, why: str) -> None:
        super().__init__(f"the gateway does not call {host}: {why}")
        self.host = host
        self.why = why


class NeedsReauth(InBandError):
    """An OAuth connection's grant at its upstream is missing, refused or expired (R-13.1): someone
    must authorize it again at ``url`` (None when no authorization could be started)."""

    code: ClassVar[str] = "needs_reauth"

    def __init__(self, account: str, url: str | None) -> None:
        fix = f"authorize it at {url}" if url else "refresh the connection to get a link to authorize it"
        super().__init__(f"connection {account!r} needs to be authorized again at its provider: {fix}")
        self.account = account
        self.url = url

    def extra(self) -> dict[str, Any]:
        return {"account": self.account, "authorize_url": self.url}


class UpstreamTimeout(InBandError):
    code: ClassVar[str] = "upstream_timeout"


class RateLimited(InBandError):
    """A rate limit is spent (R-7.10); ``retry_after`` seconds from now the call may pass."""

    code: ClassVar[str] = "rate_limited"

    def __init__(self, message: str, retry_after: float) -> None:
        super().__init__(message)
        self.retry_after = max(1, math.ceil(retry_after))

    def extra(self) -> dict[str, Any]:
        return {"retry_after": self.retry_after}


class ToolChanged(InBandError):
    """The upstream changed the tool's definition since it was accepted (R-13.4): it is held until
    an admin accepts the change."""

    code: ClassVar[str] = "tool_changed"


class Cancelled(InBandError):
    """The caller cancelled the call (R-3.3); also its audit outcome."""

    code: ClassVar[str] = "cancelled"


class TooLarge(InBandError):
    code: ClassVar[str] = "too_large"


class ApprovalRequired(InBandError):
    """The call needs an approval first (R-11.2's approval step); an admin or owner approves it at
    ``approval_url``, then the same call (same tool and arguments) runs once."""

    code: ClassVar[str] = "approval_required"

    def __init__(self, approval_id: str, approval_url: str, expires_at: float) -> None:
        super().__init__(
            f"this call needs an approval: an admin or owner approves {approval_id} at {approval_url}, "
            "then call again with the same tool and arguments"
        )
        self.approval_id = approval_id
        self.approval_url = approval_url
        self.expires_at = expires_at

    def extra(self) -> dict[str, Any]:
        return {
            "approval_id": self.approval_id,
            "approval_url": self.approval_url,
            "expires_at": self.expires_at,
        }


class ApprovalDeclined(InBandError):
    code: ClassVar[str] = "approval_declined"


class ElicitationUnavailable(InBandError):
    """The upstream asked the user a question (MCP elicitation) that this session cannot carry."""

    code: ClassVar[str] = "elicitation_unavailable"


class InternalError(InBandError):
    """Anything unexpected, answered in-band with only an incident id; the traceback is logged under it."""

    code: ClassVar[str] = "internal_error"

    def __init__(self, incident: str) -> None:
        super().__init__(f"internal error; the server log has incident {incident}")
        self.incident = incident

    def extra(self) -> dict[str, Any]:
        return {"id": self.incident}


class CatalogError(ToolcribError):
    code: ClassVar[str] = "catalog_refused"


class CatalogRefused(CatalogError):
    """A whole catalog was refused (R-4.2: over 16 MiB or 5,000 tools); the previous one stays."""


class ToolRefused(CatalogError):
    """One tool was kept out of search and execution (R-4.2: schema over 256 KiB or 32 levels)."""


class Unauthenticated(ToolcribError):
    """The request carries no grant, or one that is unknown, expired, revoked or of an inactive member."""

    code: ClassVar[str] = "invalid_token"


class SignInRefused(ToolcribError):
    """A sign-in through the organization's OpenID Provider was refused (R-7.7, R-7.8).

    ``error`` is the name the standards give it (``invalid_request``, ``access_denied``,
    ``invalid_grant``, ``server_error``, ``temporarily_unavailable``, ``invalid_token``), and
    ``reason`` the precise cause (``state_mismatch``, ``nonce_mismatch``, ``no_role``, ...), both
    shown on the page a person lands on; the message never carries the provider's own text.
    """

    code: ClassVar[str] = "sign_in_refused"

    def __init__(self, error: str, reason: str, message: str) -> None:
        super().__init__(message)
        self.error = error
        self.reason = reason


class ConfigError(ToolcribError):
    code: ClassVar[str] = "invalid_request"


class StoreError(ToolcribError):
    code: ClassVar[str] = "store_error"


class StoreBusy(StoreError, InBandError):
    """The database stayed locked through the store's retries; the caller may try again (R-3.3).

    The message given is for the log only: the in-band answer always carries the fixed text below,
    so no SQL or driver text reaches a client.
    """

    code: ClassVar[str] = "store_busy"
    public_message: ClassVar[str] = "the store is busy; try again shortly"

    def __init__(self, message: str = "the store is busy") -> None:
        super().__init__(message)

    def to_payload(self) -> dict[str, Any]:
        return {"error": {"code": self.code, "message": self.public_message}}
