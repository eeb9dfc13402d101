"""What an upstream session is made from: how to reach the server (``UpstreamSpec``) and whose
OAuth grant it presents (``OAuthBinding``, kept in a ``GrantVault``).

Plain values, importing nothing of the MCP SDK: the gateway's use cases and a one-shot command of
the command line build and compare them without loading the SDK, which only the sessions
(``session``) and the OAuth flows (``oauth``) need.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol
from urllib.parse import urlsplit

__all__ = ["GrantVault", "OAuthBinding", "OnDone", "UpstreamSpec"]

_REDACTED = "[REDACTED]"
_MIN_SECRET_LENGTH = 6  # as toolcrib.gateway.calls.shaping.MIN_SECRET_LENGTH


class GrantVault(Protocol):
    """Where one grant is kept, sealed (the gateway gives one over the store, R-13.3)."""

    async def tokens(self) -> tuple[dict[str, Any] | None, float | None]:
        """The tokens, and when to renew the access token."""
        ...

    async def save_tokens(self, tokens: dict[str, Any], refresh_by: float | None) -> None: ...

    async def client(self) -> dict[str, Any] | None: ...

    async def save_client(self, client: dict[str, Any]) -> None: ...

    async def open_pending(self, state: str, ttl: float, *, url: str, starter: str) -> str:
        """Record ``state`` as waiting for its callback, for ``ttl`` seconds, with the authorize
        ``url`` kept sealed; the start link token given to ``starter``, who alone may use it."""
        ...

    async def take_answer(self, state: str) -> dict[str, Any] | None:
        """The callback's answer to ``state`` (code, state, iss; or error), once."""
        ...

    async def drop_pending(self, state: str) -> None: ...


@dataclass(frozen=True, slots=True)
class OAuthBinding:
    """Whose grant at which upstream, and how to ask for one. Compared by value (a changed client
    or callback starts a new session); the vault is not part of the value."""

    vault: GrantVault = field(compare=False, repr=False)
    account: str
    member: str = ""
    redirect_uri: str = ""
    client_id: str | None = None
    client_secret: str | None = field(default=None, repr=False)
    scope: str | None = None
    refresh_margin: float = 60.0
    pending_seconds: float = 600.0
    known: list[str] = field(default_factory=list, compare=False, repr=False)
    """The grant's tokens seen lately (kept up to date by the vault), for redaction."""


@dataclass(frozen=True, slots=True)
class UpstreamSpec:
    """How to reach one upstream MCP server."""

    name: str
    transport: Literal["stdio", "http"]
    command: tuple[str, ...] = ()
    url: str | None = None
    env: dict[str, str] = field(default_factory=dict)
    headers: dict[str, str] = field(default_factory=dict)
    scrub: Callable[[str], str] | None = field(default=None, compare=False, repr=False)
    """The gateway's redaction of free text for this connection (R-13.3); see :meth:`redact`."""
    oauth: OAuthBinding | None = None
    """OAuth 2.1 at the upstream (#14): whose grant the session presents and renews."""

    def secret_values(self) -> list[str]:
        """The credential values of this connection, for redaction (R-12.2): every ``env`` and
        header value, the password of the URL, and OAuth's client secret and tokens."""
        password = urlsplit(self.url).password if self.url else None
        oauth = [self.oauth.client_secret, *self.oauth.known] if self.oauth else []
        return [v for v in (*self.env.values(), *self.headers.values(), password, *oauth) if v]

    def redact(self, text: str) -> str:
        """Free text (stderr, an error message, a log line) without this connection's credentials.

        ``scrub``, given by the gateway, is the redaction of results (R-12.2: the secrets and the
        credential shapes). Without it, the secret values themselves are replaced, from the same
        length up (shorter ones would blank ordinary words).
        """
        if self.scrub is not None:
            return self.scrub(text)
        for secret in sorted(self.secret_values(), key=len, reverse=True):
            if len(secret) >= _MIN_SECRET_LENGTH:
                text = text.replace(secret, _REDACTED)
        return text


OnDone = Callable[[OAuthBinding, bool, str | None], Coroutine[Any, Any, None]]
"""Told when an authorization flow ends (unless a newer flow replaced it): its binding, whether it
succeeded, and why not."""
