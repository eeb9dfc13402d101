"""Search that learns from the organization's use (SPEC R-5.12): recording, and the admins' acts.

A search that issues handles is stored with them (``search_row``): its query's vector, the hash
of its text, the text only under ``TOOLCRIB_SEARCH_LEARNING=text``, nothing at all under ``off``.
When a call through one of those handles succeeds, ``record_success`` copies that search into the
tool's examples (bounded per tool and per member, ``search.usage``) and this process's index
learns them at once; the others learn it from the store's announcement or their poll
(``gateway.discovery.examples``). Recording never fails a call nor holds its answer: ``learn_later`` runs it
beside the answer, once the call's audit row is closed, and any failure is logged (its kind, never
its text) and dropped.

Admins (``connections:write``, like a tool's accepted definition) read how many examples each tool
has and from how many members (``example_counts``: no vectors, no text), and clear them
(``forget_examples``: one audited act, on every face).
"""

from __future__ import annotations

import hashlib
import logging
import secrets
from typing import Any

import numpy as np

from toolcrib.errors import InvalidArguments, NotFound
from toolcrib.gateway.audit.entries import admin_row
from toolcrib.gateway.core import Gateway
from toolcrib.gateway.governance import reach
from toolcrib.policy.gates import Principal, require_operation
from toolcrib.search.semantic import Matrix
from toolcrib.search.usage import MAX_EXAMPLES, MAX_PER_MEMBER
from toolcrib.store import learning as store
from toolcrib.store.handles import HandleRow
from toolcrib.store.learning import SearchRow

__all__ = ["PERMISSION", "example_counts", "forget_examples", "learn_later", "record_success", "search_row"]

logger = logging.getLogger(__name__)

PERMISSION = "connections:write"
"""Reading and clearing examples: who may change what a tool is may change what it was used for."""
_MAX_NAME = 320  # a public name's longest (the column's width)


def search_row(gw: Gateway, principal: Principal, query: str, vector: Matrix | None) -> SearchRow | None:
    """The search ``principal`` just ran, as stored with the handles it issues (None: nothing is
    stored, learning being off or the query having no vector)."""
    mode = gw.settings.search_learning
    if mode == "off" or vector is None:
        return None
    return SearchRow(
        id="srch_" + secrets.token_hex(16),
        member=principal.member,
        vector=np.asarray(vector, dtype="<f4").reshape(-1).tobytes(),
        text_sha256=hashlib.sha256(query.encode("utf-8", "surrogatepass")).hexdigest(),
        text=query if mode == "text" else None,
        created_at=gw.store.clock(),
    )


def learn_later(gw: Gateway, principal: Principal, handle: HandleRow, *, account: str, tool: str) -> None:
    """``record_success`` in the background: the caller's answer does not wait for the store (a
    write transaction: round trips on PostgreSQL, the writer's turn on a busy SQLite file)."""
    if handle.search_id is None or gw.settings.search_learning == "off":
        return

    async def work() -> None:
        try:
            await record_success(gw, principal, handle, account=account, tool=tool)
        finally:
            gw.learned.recording -= 1

    gw.learned.recording += 1
    try:
        gw.upstreams.run_in_background(work)
    except Exception as exc:  # a gateway closing: the call's answer still goes out
        gw.learned.recording -= 1
        logger.warning("search learning: the example was not recorded (%s)", type(exc).__name__)


async def record_success(
    gw: Gateway, principal: Principal, handle: HandleRow, *, account: str, tool: str
) -> None:
    """``principal`` ran ``tool`` of ``account`` successfully through ``handle``: the search that
    issued it becomes an example of the tool. Never raises (but a cancellation)."""
    if handle.search_id is None or gw.settings.search_learning == "off":
        return
    try:
        kept = await store.record_example(
            gw.store.db,
            search_id=handle.search_id,
            account=account,
            tool=tool,
            public_name=handle.public_name,
            member=principal.member,
            now=gw.store.clock(),
            per_tool=MAX_EXAMPLES,
            per_member=MAX_PER_MEMBER,
        )
        if kept is not None:
            await gw.learned.install(handle.public_name, kept)
    except Exception as exc:  # the call succeeded: a failure to learn from it is the log's business
        logger.warning("search learning: the example was not recorded (%s)", type(exc).__name__)


async def example_counts(gw: Gateway, principal: Principal) -> list[dict[str, Any]]:
    """Per tool of the connections ``principal`` reaches: its examples and distinct members."""
    require_operation(principal, PERMISSION, "examples")
    rules = (await gw.policy.current()).rules
    return [
        {"tool": c.public_name, "examples": c.examples, "members": c.members, "newest": c.newest}
        for c in await store.count_examples(gw.store.db)
        if reach.lists_connection(
            rules, principal, gw.catalog.connections.get(c.public_name.partition("__")[0])
        )
    ]


async def forget_examples(gw: Gateway, principal: Principal, tool: str | None) -> dict[str, Any]:
    """Clear what searches learned of ``tool`` (a public name), or of every tool; audited."""
    require_operation(principal, PERMISSION, "forget")
    account = ""
    if tool is not None:
        if not tool or len(tool) > _MAX_NAME:
            raise InvalidArguments(
                "`tool` names one tool by its public name",
                [{"pointer": "/tool", "message": "not a tool name"}],
            )
        account = tool.partition("__")[0]
        if not reach.lists_connection(
            (await gw.policy.current()).rules, principal, gw.catalog.connections.get(account)
        ):
            raise NotFound(f"no connected tool named {tool!r}")
    operation = f"{gw.settings.control_prefix}__search__forget"
    audit_row = admin_row(
        gw, principal, account=account, operation=operation, classification="destructive", target=tool
    )
    deleted = await store.forget_examples(gw.store.db, tool, audit_row)
    await gw.learned.forget(tool)
    return {"tool": tool, "forgotten": deleted}
