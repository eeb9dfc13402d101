"""``search_tools``: ranked cards of the connected tools the caller may reach (SPEC sections 3, 5)."""

from __future__ import annotations

from typing import Any

from toolcrib.catalog.budget import fit_search_response
from toolcrib.catalog.cards import build_card
from toolcrib.gateway import reach
from toolcrib.gateway.core import Gateway, PolicySnapshot
from toolcrib.gateway.handles import issue_handles
from toolcrib.policy.gates import Principal, Visibility, require_execute, require_tools_scope, visibility

__all__ = ["flat_listing_bytes", "search_tools", "visibility_of"]

MAX_LIMIT = 5


def visibility_of(gw: Gateway, principal: Principal, policy: PolicySnapshot, public_name: str) -> Visibility:
    """Where one tool shows for ``principal``: the resolver and the gates decide (R-5.1, R-8.4)."""
    found = gw.lookup(public_name)
    if found is None:
        return "hidden"
    row, stored = found
    if row.status != "active":
        return "hidden"
    risk = gw.risk_of(policy, stored)
    decision = reach.decide(
        policy.rules,
        principal,
        account=row.name,
        connector=row.connector,
        tool=stored.record.name,
        where="search",
    )
    return visibility(principal, risk=risk, decision=decision)


async def flat_listing_bytes(gw: Gateway, principal: Principal) -> int:
    """What a flat listing of the catalog visible to ``principal`` would have cost (R-14.1)."""
    policy = await gw.policy()
    return gw.flat_listing_bytes(lambda name: visibility_of(gw, principal, policy, name) == "visible")


async def search_tools(gw: Gateway, principal: Principal, query: str, limit: int = 3) -> dict[str, Any]:
    """``{"results": [card...], "restricted": [name...]}`` (+ ``not_connected``), within budget (R-5.9)."""
    require_execute(principal)
    require_tools_scope(principal)
    limit = max(1, min(MAX_LIMIT, int(limit)))
    await gw.sync_from_store()
    policy = await gw.policy()
    seen: dict[str, Visibility] = {}

    def where(name: str) -> Visibility:
        if name not in seen:
            seen[name] = visibility_of(gw, principal, policy, name)
        return seen[name]

    found = gw.index.search(
        query,
        limit=limit,
        visible=lambda name: where(name) == "visible",
        withheld=lambda name: where(name) == "restricted",
    )
    cards: list[dict[str, Any]] = []
    pinned: list[tuple[str, str]] = []
    for hit in found.hits:
        located = gw.lookup(hit.public_name)
        if located is None:
            continue
        row, stored = located
        record = stored.record
        card = build_card(
            record, risk=gw.risk_of(policy, stored), frozen=policy.frozen_for(row.name, record.name).keys()
        )
        card["confidence"] = hit.confidence
        cards.append(card)
        pinned.append((record.public_name, record.schema_hash))
    for card, handle in zip(cards, await issue_handles(gw, principal.member, pinned), strict=True):
        card["action_id"] = handle
    return fit_search_response(cards, restricted=found.restricted, not_connected=found.not_connected or None)
