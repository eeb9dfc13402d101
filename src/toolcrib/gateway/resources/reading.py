"""``prompts/get`` and ``resources/read`` through the gateway: the gates of ``execute_tool``,
one audit entry, then redaction and caps (R-16.2).

In order: ``tool:execute`` and ``mcp:read``; the name or URI resolves to a connection the caller
may reach; the connection is ``active``; the resolver allows the item's name; the audit entry is
opened (``kind`` prompt or resource, the account reached, the prompt name or the original URI as
target); the upstream is asked within the call timeout; the entry is closed with the outcome; the
result is redacted and capped. An item the resolver withholds answers exactly as an unknown one
(``not_found``, the same words), and so does a URI its upstream does not know.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any, Literal

import anyio

from toolcrib.errors import ConnectionInactive, InBandError, InvalidArguments, NotFound, UpstreamTimeout
from toolcrib.gateway.audit import entries as audit
from toolcrib.gateway.calls.results import without_protocol_meta
from toolcrib.gateway.calls.shaping import Caps, redact_text
from toolcrib.gateway.connections.manage import shown_reason, spec_of
from toolcrib.gateway.connections.shown import secrets_of
from toolcrib.gateway.core import Gateway
from toolcrib.gateway.resources import access
from toolcrib.gateway.resources.naming import parse_gateway_uri, split_prompt_name, template_matches
from toolcrib.gateway.resources.offerings import FRESH_SECONDS, LISTING_SECONDS, listed
from toolcrib.gateway.resources.pinning import held_prompts, prompt_changed
from toolcrib.gateway.resources.shaping import shape_contents, shape_prompt
from toolcrib.gateway.resources.stored import shaped_and_stored
from toolcrib.gateway.storage import Storage
from toolcrib.policy.gates import Principal
from toolcrib.store.connections import ConnectionRow

if TYPE_CHECKING:
    from mcp.client import Client

    from toolcrib.upstream.session import UpstreamSession

__all__ = [
    "Gated",
    "gated_resource",
    "get_prompt",
    "no_resource",
    "reachable",
    "read_resource",
    "resource_names",
]

_UNKNOWN_CODES = frozenset({-32002, -32602})  # resource not found (2025), invalid params (2026-07-28)


def _no_prompt(name: str) -> NotFound:
    return NotFound(f"no prompt named {name!r}; list them with prompts/list")


def no_resource(uri: str) -> NotFound:
    return NotFound(f"no resource {uri[:300]!r}; list them with resources/list")


async def get_prompt(
    gw: Gateway, principal: Principal, name: str, arguments: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """The prompt ``{account}__{prompt}`` filled with ``arguments`` (strings), as the caller reads it."""
    access.require_reader(principal)
    args = dict(arguments or {})
    if not all(isinstance(v, str) for v in args.values()):
        raise InvalidArguments("a prompt's arguments are strings")
    parsed = split_prompt_name(name)
    if parsed is None:
        raise _no_prompt(name)
    account, prompt = parsed
    row = await reachable(gw, principal, account, _no_prompt(name))
    if access.withholds((await gw.policy.current()).rules, principal, row, prompt):
        raise _no_prompt(name)
    spec = spec_of(gw, row, principal.member)
    session = gw.upstreams.session(spec)
    secrets = secrets_of(gw.policy, spec)
    if row.pinning != "off" and prompt in await _held(gw.store, row, session, prompt, secrets):
        raise prompt_changed(name)
    raw = await _audited(
        gw, principal, row, "prompt", prompt, prompt, _no_prompt(name),
        lambda: session.ask("prompts/get", lambda c: _get(c, prompt, args)),
    )  # fmt: skip
    shape = partial(_shape_prompt, account=account, secrets=secrets)
    return await shaped_and_stored(gw.store, principal, row, prompt, raw, shape)


async def _held(
    storage: Storage, row: ConnectionRow, session: UpstreamSession, prompt: str, secrets: list[str]
) -> set[str]:
    """The held prompts of ``row`` by its prompt listing (a fresh one when the kept one does not
    name ``prompt``: it may have been added or changed since); a listing that fails fails the get,
    since whether the prompt is held cannot be told."""
    items = await listed(session, "prompts", secrets)
    if not any(item.get("name") == prompt for item in items):
        items = await listed(session, "prompts", secrets, max_age=FRESH_SECONDS)
    return await held_prompts(storage.db, row, items, storage.clock())


@dataclass(frozen=True, slots=True)
class Gated:
    """A resource the caller passed the gates of a read for: its connection, upstream session,
    original URI, the names it goes by (the first shown) and the connection's secrets."""

    row: ConnectionRow
    session: UpstreamSession
    original: str
    names: list[str]
    secrets: list[str]


async def gated_resource(gw: Gateway, principal: Principal, uri: str) -> Gated:
    """The gates of a read for the gateway URI ``uri`` (R-16.2): ``mcp:read``, a connection the
    caller may reach and active, and the resolver on every name the resource goes by; withheld
    and unknown answer alike."""
    access.require_reader(principal)
    parsed = parse_gateway_uri(uri)
    if parsed is None:
        raise no_resource(uri)
    account, original = parsed
    row = await reachable(gw, principal, account, no_resource(uri))
    spec = spec_of(gw, row, principal.member)
    session = gw.upstreams.session(spec)
    secrets = secrets_of(gw.policy, spec)
    names = await resource_names(session, original, secrets)
    rules = (await gw.policy.current()).rules
    if any(access.withholds(rules, principal, row, name) for name in names):
        raise no_resource(uri)
    return Gated(row, session, original, names, secrets)


async def read_resource(gw: Gateway, principal: Principal, uri: str) -> dict[str, Any]:
    """The resource at the gateway URI ``uri`` (a listed one, a filled template's or a link's)."""
    found = await gated_resource(gw, principal, uri)
    row, session, original, secrets = found.row, found.session, found.original, found.secrets
    account, name = row.name, found.names[0]
    raw = await _audited(
        gw, principal, row, "resource", redact_text(name, secrets), redact_text(original, secrets),
        no_resource(uri),
        lambda: session.ask("resources/read", lambda c: _read(c, original)),
    )  # fmt: skip
    shape = partial(_shape_contents, account=account, secrets=secrets)
    return await shaped_and_stored(gw.store, principal, row, name, raw, shape)


async def reachable(gw: Gateway, principal: Principal, account: str, unknown: NotFound) -> ConnectionRow:
    """The connection of ``account`` when ``principal`` may reach it; unknown and withheld alike
    answer ``unknown``; an inactive one answers ``connection_inactive``."""
    row = gw.catalog.connections.get(account)
    rules = (await gw.policy.current()).rules
    if row is None or not access.reaches_account(rules, principal, row):
        raise unknown
    if row.status != "active":
        raise ConnectionInactive(account, row.status, shown_reason(gw, row))
    return row


async def resource_names(session: UpstreamSession, original: str, secrets: list[str]) -> list[str]:
    """The names the resource at ``original`` goes by: of the listed resource at that URI, and of
    every template it fills (the resolver withholds it when it withholds any of them); the URI
    itself when it is neither listed nor fills a template."""
    # A listing that fails fails the read: a name it would have shown may be withheld. A URI the
    # kept listings do not name is looked up in fresh ones: it may have been added since.
    names = await _names_in_listings(session, original, secrets, LISTING_SECONDS)
    if not names:
        names = await _names_in_listings(session, original, secrets, FRESH_SECONDS)
    return names or [original]


async def _names_in_listings(
    session: UpstreamSession, original: str, secrets: list[str], max_age: float
) -> list[str]:
    names: list[str] = []
    for item in await listed(session, "resources", secrets, max_age=max_age):
        if item.get("uri") == original:
            names.append(access.item_name(item, original))
    for item in await listed(session, "resources/templates", secrets, max_age=max_age):
        template = item.get("uriTemplate")
        if isinstance(template, str) and template_matches(template, original):
            names.append(access.item_name(item, original))
    return names


async def _audited(
    gw: Gateway,
    principal: Principal,
    row: ConnectionRow,
    kind: Literal["prompt", "resource"],
    name: str,
    target: str,
    unknown: NotFound,
    send: Callable[[], Awaitable[Any]],
) -> dict[str, Any]:
    """The upstream request between the opening and the closing of its audit entry (R-11.1)."""
    entry = await audit.open_entry(
        gw,
        principal,
        account=row.name,
        connector=row.connector,
        operation=f"{row.name}__{name}"[:320],
        risk=access.READ_SCOPE_RISK,
        target=target[:200],
        kind=kind,
    )
    try:
        answer = await send()
    except InBandError as exc:
        outcome = "timeout" if isinstance(exc, UpstreamTimeout) else "error"
        await audit.close_entry(gw.store, entry, outcome=outcome, error_code=exc.code)
        if _upstream_code(exc) in _UNKNOWN_CODES:
            raise unknown from None
        raise
    except anyio.get_cancelled_exc_class():
        with anyio.CancelScope(shield=True):
            await audit.close_entry(gw.store, entry, outcome="cancelled", error_code=None)
        raise
    except BaseException:
        with anyio.CancelScope(shield=True):
            await audit.close_entry(gw.store, entry, outcome="unknown", error_code=None)
        raise
    with anyio.CancelScope(shield=True):
        await audit.close_entry(gw.store, entry, outcome="ok", error_code=None)
    return _as_ours(answer.model_dump(mode="json", by_alias=True, exclude_none=True))


_UPSTREAM_ONLY = frozenset({"ttlMs", "cacheScope", "resultType"})
"""How long the upstream lets its own answer be cached, and its kind: the gateway's answer is
its own (a restriction changed since must not be outlived by an upstream's cache time)."""


def _as_ours(result: dict[str, Any]) -> dict[str, Any]:
    """An upstream answer without its cache hints and the ``_meta`` keys of the protocol's own
    namespace (they describe the upstream's side of its connection, R-3.3)."""
    out = without_protocol_meta({k: v for k, v in result.items() if k not in _UPSTREAM_ONLY})
    for key in ("contents", "messages"):
        if isinstance(out.get(key), list):
            out[key] = [without_protocol_meta(item) if isinstance(item, dict) else item for item in out[key]]
    return out


def _upstream_code(exc: BaseException) -> int | None:
    """The JSON-RPC code the upstream answered with, when an MCP error caused ``exc``."""
    cause = exc.__cause__
    code = getattr(cause, "code", None)
    return code if isinstance(code, int) else None


async def _get(client: Client, prompt: str, arguments: dict[str, str]) -> Any:
    return await client.get_prompt(prompt, arguments or None)


async def _read(client: Client, uri: str) -> Any:
    return await client.read_resource(uri, cache_mode="refresh")


def _shape_prompt(raw: Mapping[str, Any], caps: Caps, *, account: str, secrets: list[str]) -> dict[str, Any]:
    return shape_prompt(raw, account, secrets, caps)


def _shape_contents(
    raw: Mapping[str, Any], caps: Caps, *, account: str, secrets: list[str]
) -> dict[str, Any]:
    return shape_contents(raw, account, secrets, caps)
