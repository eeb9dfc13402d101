"""Prompts and resources on the REST face and the command line (``toolcrib prompts list``,
``toolcrib resources list|list_templates|read``): the same listing and reading as ``/mcp``.

``member`` answers as that member would be answered (their role and restrictions, the caller's
scopes): who may use it needs ``restrictions:read`` besides, as explaining a rule does. The command
line's ``--as`` acts as the member instead, as ``toolcrib call --as`` does.
"""

from __future__ import annotations

from typing import Any

from toolcrib.errors import NotFound
from toolcrib.gateway.core import Gateway
from toolcrib.gateway.resources.listing import list_offered
from toolcrib.gateway.resources.offerings import Kind
from toolcrib.gateway.resources.reading import read_resource
from toolcrib.gateway.storage import Storage
from toolcrib.policy.gates import Principal, require
from toolcrib.store import members as member_store

__all__ = ["list_for", "read_for"]


async def _as(storage: Storage, caller: Principal, member: str | None) -> Principal:
    if member is None or member == caller.member:
        return caller
    require(caller, "restrictions:read", "read")
    found = await member_store.get_member(storage.db, member)
    if found is None or found.status != "active":
        raise NotFound(f"no active member named {member!r}")
    return Principal(member=found.name, role=found.role, scopes=caller.scopes, grant_id=caller.grant_id)


async def list_for(
    gw: Gateway,
    caller: Principal,
    kind: Kind,
    *,
    account: str | None = None,
    cursor: str | None = None,
    member: str | None = None,
) -> dict[str, Any]:
    """One page of ``kind`` (of ``account`` alone, when given) and the next page's cursor."""
    principal = await _as(gw.store, caller, member)
    items, following = await list_offered(gw, principal, kind, cursor, account=account)
    key = {"prompts": "prompts", "resources": "resources", "resources/templates": "resourceTemplates"}[kind]
    return {key: items, "nextCursor": following}


async def read_for(gw: Gateway, caller: Principal, uri: str, *, member: str | None = None) -> dict[str, Any]:
    """The resource at the gateway URI ``uri``, as ``resources/read`` answers it."""
    return await read_resource(gw, await _as(gw.store, caller, member), uri)
