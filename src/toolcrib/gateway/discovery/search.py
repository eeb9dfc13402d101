"""``search_tools``: ranked cards of the connected tools the caller may reach (SPEC sections 3, 5).

A search reads the index and catalogs this process holds, and nothing of the connections table:
what another process changed reaches them through the background follower (``follower``), so no
search waits on the store's poll nor queues behind a catalog being indexed.
"""

from __future__ import annotations

from typing import Any

import anyio

from toolcrib import tracing
from toolcrib.catalog.budget import fit_search_response
from toolcrib.gateway.connections.upstream_oauth import reauth_notices
from toolcrib.gateway.core import Gateway, PolicySnapshot
from toolcrib.gateway.discovery import learning
from toolcrib.gateway.governance import reach
from toolcrib.policy.frozen import unmet_frozen
from toolcrib.policy.gates import Principal, Visibility, require_execute, require_tools_scope, visibility
from toolcrib.search.index import Hit
from toolcrib.search.semantic import MAX_QUERY_CHARACTERS

__all__ = ["flat_listing_bytes", "search_tools", "visibility_of"]

MAX_LIMIT = 5


def visibility_of(gw: Gateway, principal: Principal, policy: PolicySnapshot, public_name: str) -> Visibility:
    """Where one tool shows for ``principal``: the resolver and the gates decide (R-5.1, R-8.4)."""
    found = gw.catalog.lookup(public_name)
    if found is None:
        return "hidden"
    row, stored = found
    if row.status != "active" or stored.held:  # a held tool is not searchable
        return "hidden"
    frozen = policy.frozen_for(row.name, stored.record.name)
    if frozen and unmet_frozen(stored.record.input_schema, frozen):  # held for its frozen values
        return "hidden"
    risk = policy.risk_of(stored)
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
    policy = await gw.policy.current()
    return gw.catalog.flat_listing_bytes(lambda name: visibility_of(gw, principal, policy, name) == "visible")


async def search_tools(gw: Gateway, principal: Principal, query: str, limit: int = 3) -> dict[str, Any]:
    """``{"results": [card...], "restricted": [name...]}`` (+ ``not_connected``), within budget (R-5.9).

    Only the first ``MAX_QUERY_CHARACTERS`` of the query are read; when it was cut, the answer says
    so (``"query_truncated": true``). Ranking (and encoding the query) runs in a worker thread, and
    cards come from the card cache, so no query and no tool holds up the event loop.
    """
    with tracing.span(
        "search_tools", {tracing.OPERATION: "search_tools", tracing.MEMBER: principal.member}
    ) as span:
        answer = await _search(gw, principal, query, limit)
        span.set("toolcrib.search.results", len(answer.get("results") or ()))
        span.outcome("ok")
        return answer


async def _search(gw: Gateway, principal: Principal, query: str, limit: int) -> dict[str, Any]:
    """The steps of ``search_tools``. With traces on, the query's encoding and the ranking (its
    visibility and answer-or-empty gates) are spans, the handles' write a database span naming its
    step; none carries the query."""
    truncated = len(query) > MAX_QUERY_CHARACTERS
    query = query[:MAX_QUERY_CHARACTERS]
    require_execute(principal)
    require_tools_scope(principal)
    limit = max(1, min(MAX_LIMIT, int(limit)))
    policy = await gw.policy.current()
    seen: dict[str, Visibility] = {}

    def where(name: str) -> Visibility:
        if name not in seen:
            seen[name] = visibility_of(gw, principal, policy, name)
        return seen[name]

    found = await gw.index.search(
        query,
        limit=limit,
        visible=lambda name: where(name) == "visible",
        withheld=lambda name: where(name) == "restricted",
    )
    cards, pinned = await _cards_for(gw, policy, found.hits)
    search = learning.search_row(gw, principal, query, found.query_vector)
    with tracing.step("search.handles"):  # the handles' write is a database span naming this step
        handles = await gw.handles.issue(principal, pinned, search)
    for card, handle in zip(cards, handles, strict=True):
        card["action_id"] = handle
    flags: dict[str, Any] = {"query_truncated": True} if truncated else {}
    waiting = reauth_notices(gw, principal, policy)
    if waiting:  # connections whose tools are absent until someone authorizes them again (#14)
        flags["needs_reauth"] = waiting
    return fit_search_response(
        cards, restricted=found.restricted, not_connected=found.not_connected or None, flags=flags
    )


async def _cards_for(
    gw: Gateway, policy: PolicySnapshot, hits: list[Hit]
) -> tuple[list[dict[str, Any]], list[tuple[str, str]]]:
    """The hits' cards from the card cache, and the (public name, schema hash) each handle pins.

    A card is missing only when a policy change (classification, frozen values) made it another
    card: those are built once, in a worker thread, and cached.
    """
    located = [(hit, pair) for hit in hits if (pair := gw.catalog.lookup(hit.public_name)) is not None]
    wanted = [
        (stored.record, policy.risk_of(stored), policy.frozen_for(row.name, stored.record.name).keys())
        for _, (row, stored) in located
    ]
    found = [gw.cards.get(*want) for want in wanted]
    missing = [want for want, card in zip(wanted, found, strict=True) if card is None]
    if missing:
        await anyio.to_thread.run_sync(gw.cards.build, missing)
        found = [card or gw.cards.get(*want) for want, card in zip(wanted, found, strict=True)]
    cards: list[dict[str, Any]] = []
    pinned: list[tuple[str, str]] = []
    for (hit, _), want, card in zip(located, wanted, found, strict=True):
        if card is None:  # the catalog changed under this search: the tool is no longer there
            continue
        card["confidence"] = hit.confidence
        cards.append(card)
        pinned.append((want[0].public_name, want[0].schema_hash))
    return cards, pinned
