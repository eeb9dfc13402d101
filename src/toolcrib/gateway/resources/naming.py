"""How prompts and resources of connections are named through the gateway (R-16.1). Pure.

- A prompt is ``{account}__{prompt}``, like a connected tool.
- A resource URI becomes ``toolcrib://{account}/{original URI}``: the account routes a read back
  to its connection, and two connections publishing ``docs://handbook`` never collide. An MCP
  Apps view ``ui://{rest}`` becomes ``ui://toolcrib/{account}/{rest}`` (hosts render ``ui://``
  resources only). The
  original is appended as it is (never re-encoded), so a template rewritten the same way and then
  filled by a client gives exactly the gateway URI of what the upstream's own template would give.
  The original is also kept in ``_meta`` (:data:`ORIGINAL_URI`).
- A listing's cursor is opaque to the client: which connection the next page starts in and where.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from dataclasses import dataclass

__all__ = [
    "ACCOUNT_META",
    "ORIGINAL_TEMPLATE",
    "ORIGINAL_URI",
    "SCHEME",
    "UI_PREFIX",
    "UI_SCHEME",
    "Cursor",
    "gateway_uri",
    "parse_gateway_uri",
    "split_prompt_name",
    "template_matches",
]

SCHEME = "toolcrib://"
UI_SCHEME = "ui://"
UI_PREFIX = "ui://toolcrib/"
"""Where the views of the MCP Apps extension go: hosts render only ``ui://`` resources."""
ORIGINAL_URI = "toolcrib/originalUri"
ORIGINAL_TEMPLATE = "toolcrib/originalUriTemplate"
ACCOUNT_META = "toolcrib/account"
_ACCOUNT = re.compile(r"^[a-z0-9][a-z0-9-]{0,39}$")
_MAX_URI = 8192


def gateway_uri(account: str, uri: str) -> str:
    """The gateway's URI of ``uri`` (or of a URI template) of ``account``; an MCP Apps view
    (``ui://…``) stays a ``ui://`` URI, which is what hosts render: ``ui://toolcrib/{account}/…``."""
    if uri.startswith(UI_SCHEME) and len(uri) > len(UI_SCHEME):
        return f"{UI_PREFIX}{account}/{uri[len(UI_SCHEME) :]}"
    return f"{SCHEME}{account}/{uri}"


def parse_gateway_uri(uri: str) -> tuple[str, str] | None:
    """The account and original URI behind a gateway URI; None when ``uri`` is not one."""
    if len(uri) > _MAX_URI:
        return None
    if uri.startswith(UI_PREFIX):
        account, slash, rest = uri[len(UI_PREFIX) :].partition("/")
        original = UI_SCHEME + rest if rest else ""
    elif uri.startswith(SCHEME):
        account, slash, original = uri[len(SCHEME) :].partition("/")
    else:
        return None
    if not slash or not original or not _ACCOUNT.match(account):
        return None
    return account, original


def split_prompt_name(name: str) -> tuple[str, str] | None:
    """``(account, prompt)`` of ``{account}__{prompt}``; None when it is not such a name."""
    account, sep, prompt = name.partition("__")
    if not sep or not prompt or not _ACCOUNT.match(account):
        return None
    return account, prompt


# --- templates (RFC 6570) ----------------------------------------------------------------------

_EXPRESSION = re.compile(r"\{([+#./;?&]?)[^{}]*\}")
_EXCLUDED = {  # what an expansion of each operator cannot hold (a little looser than RFC 6570)
    "": frozenset("/?#"),
    "+": frozenset("?#"),
    "#": frozenset(),
    ".": frozenset("/?#"),
    "/": frozenset("?#"),
    ";": frozenset("/?#"),
    "?": frozenset("#"),
    "&": frozenset("#"),
}
_Token = str | frozenset[str]  # a literal, or a run of any characters but these


def _tokens(template: str) -> list[_Token]:
    tokens: list[_Token] = []
    done = 0
    for match in _EXPRESSION.finditer(template):
        if match.start() > done:
            tokens.append(template[done : match.start()])
        tokens.append(_EXCLUDED[match[1]])
        done = match.end()
    if done < len(template):
        tokens.append(template[done:])
    return tokens


def template_matches(template: str, uri: str) -> bool:
    """Whether ``uri`` is one the URI template ``template`` expands to, read as a pattern.

    No backtracking: the set of positions reachable after each piece of the template is carried
    forward, so the work is at most the URI's length times the template's pieces, whatever the
    template and the URI (both come from outside: the upstream and the caller)."""
    if len(template) > _MAX_URI or len(uri) > _MAX_URI:
        return False
    reachable = {0}
    for token in _tokens(template):
        if isinstance(token, str):
            reachable = {p + len(token) for p in reachable if uri.startswith(token, p)}
        else:
            reachable = _runs(uri, reachable, token)
        if not reachable:
            return False
    return len(uri) in reachable


def _runs(uri: str, starts: set[int], excluded: frozenset[str]) -> set[int]:
    """Every position reachable from ``starts`` over characters not in ``excluded``."""
    reached: set[int] = set()
    for start in sorted(starts):
        at = start
        if at in reached:
            continue
        reached.add(at)
        while at < len(uri) and uri[at] not in excluded:
            at += 1
            if at in reached:
                break
            reached.add(at)
    return reached


# --- cursors -----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Cursor:
    """Where a listing's next page starts: in ``account``'s items, at ``offset``."""

    kind: str
    account: str
    offset: int

    def encode(self) -> str:
        text = json.dumps([self.kind, self.account, self.offset], separators=(",", ":"))
        return base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")

    @classmethod
    def decode(cls, kind: str, cursor: str) -> Cursor | None:
        """The cursor a page of ``kind`` handed out; None when ``cursor`` is not one."""
        if len(cursor) > 512:
            return None
        try:
            raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
            found, account, offset = json.loads(raw)
        except (binascii.Error, ValueError, TypeError):
            return None
        if found != kind or not isinstance(account, str) or not isinstance(offset, int) or offset < 0:
            return None
        return cls(kind, account, offset)
