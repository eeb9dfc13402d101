"""The search playground of the admin console (#13): one search as a given member, with its cost.

It runs the very ``search_tools`` the model's call runs, as that member (their role, and the scopes
of their unrevoked grants), and says in words which rules withhold each tool named ``restricted``.
Searching as someone else reveals what they can reach, so it needs ``members:read`` and
``restrictions:read``; anyone who may search may search as themselves.
"""

from __future__ import annotations

import json
from typing import Any

from toolcrib.errors import NotFound, PermissionRequired, ScopeRequired
from toolcrib.gateway.core import Gateway
from toolcrib.gateway.discovery.diagnose import diagnose
from toolcrib.gateway.discovery.search import flat_listing_bytes, search_tools
from toolcrib.gateway.governance import restrictions
from toolcrib.gateway.identity.members import DEFAULT_SCOPES
from toolcrib.gateway.storage import Storage
from toolcrib.policy.gates import Principal, require_operation
from toolcrib.policy.scopes import parse_scopes
from toolcrib.store import members as member_store

__all__ = ["answer_bytes", "search_as", "why_not"]

_UNEXPLAINED = "withheld by a restriction (reading the rules needs restrictions:read)"


def answer_bytes(value: Any) -> int:
    """The size of a JSON answer as the model receives it (compact UTF-8, as the telemetry counts)."""
    return len(json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode())


async def _principal_of(storage: Storage, name: str) -> Principal:
    """``name`` as a model acting for them would be: their role, the scopes of their live grants."""
    member = await member_store.get_member(storage.db, name)
    if member is None or member.status != "active":
        raise NotFound(f"no active member named {name!r}")
    now = storage.clock()
    scopes: frozenset[str] = frozenset()
    for grant in await member_store.list_grants(storage.db, name):
        if grant.revoked_at is None and (grant.expires_at is None or grant.expires_at > now):
            scopes |= grant.scopes
    return Principal(
        member=member.name,
        role=member.role,
        scopes=scopes or parse_scopes(DEFAULT_SCOPES),
        grant_id="playground",
    )


async def _subject(storage: Storage, actor: Principal, member: str) -> Principal:
    """``member`` as a model acting for them; another member than oneself needs the read rights."""
    if member == actor.member:
        return actor
    require_operation(actor, "members:read", "search")
    require_operation(actor, "restrictions:read", "explain")
    return await _principal_of(storage, member)


async def why_not(gw: Gateway, actor: Principal, member: str, tool: str) -> dict[str, Any]:
    """Why ``tool`` is missing from ``member``'s search: ``tools__diagnose`` as that member (R-10.3)."""
    return await diagnose(gw, await _subject(gw.store, actor, member), tool)


async def search_as(gw: Gateway, actor: Principal, member: str, query: str, limit: int = 3) -> dict[str, Any]:
    """``{"member", "scopes", "answer", "bytes", "flat_bytes", "withheld": {name: [reason...]}}``."""
    subject = await _subject(gw.store, actor, member)
    answer = await search_tools(gw, subject, query, limit)
    withheld: dict[str, list[str]] = {}
    for name in answer.get("restricted", []):
        try:
            withheld[name] = await restrictions.explain_restriction(
                gw, user=subject.member, role=None, tool=name, actor=actor
            )
        except (PermissionRequired, ScopeRequired):  # the rules are shown to who may read them
            withheld[name] = [_UNEXPLAINED]
    return {
        "member": subject.member,
        "role": subject.role,
        "scopes": sorted(subject.scopes),
        "answer": answer,
        "bytes": answer_bytes(answer),
        "flat_bytes": await flat_listing_bytes(gw, subject),
        "withheld": withheld,
    }
