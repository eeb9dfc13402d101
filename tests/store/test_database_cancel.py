"""A cancelled transaction on SQLite leaves no task behind, so the event loop can always close (#11).

Against a real SQLite file. Writers are cancelled at many points of their transactions (in a
statement, between two, at the commit), as a gateway's background work is when the gateway closes.
Before the fix, a statement's wait cut short made SQLAlchemy invalidate the aiosqlite connection and
leave its close running in a task of its own; a later cancellation of that task (the event loop's
own, when it closes) could leave it waiting forever on the connection's stopped thread, and closing
the loop hung: the worker of ``pytest -n 2`` that stopped for 120 s.
"""

from __future__ import annotations

import asyncio
import itertools
import threading
from pathlib import Path

import anyio

from toolcrib.store import handles as handle_store
from toolcrib.store.database import Database
from toolcrib.store.handles import HandleRow

ROUNDS = 40


async def churn(db: Database, ids: itertools.count[int]) -> None:
    """Write a row and read it back, over and over, until cancelled."""
    while True:
        n = next(ids)
        await handle_store.insert_handles(db, [HandleRow(f"h{n}", "alice", "desk__echo", "hash", 1.0)])
        assert await handle_store.get_handle(db, f"h{n}") is not None


async def cancel_writers(path: Path) -> list[str]:
    """Rounds of three writers cancelled after 1 to 10 ms; the tasks alive after each round."""
    db = Database(f"sqlite:///{path}")
    await db.migrate()
    ids = itertools.count()
    left: list[str] = []
    try:
        for n in range(ROUNDS):
            with anyio.move_on_after(0.001 * (n % 10 + 1)):
                async with anyio.create_task_group() as tg:
                    for _ in range(3):
                        tg.start_soon(churn, db, ids)
            me = asyncio.current_task()
            left += [repr(t.get_coro()) for t in asyncio.all_tasks() if t is not me]
    finally:
        await db.close()
    return left


def test_r15_cancelled_sqlite_transactions_leave_no_task_behind_and_the_loop_closes(tmp_path: Path) -> None:
    outcome: dict[str, list[str]] = {}

    def run() -> None:  # an event loop of its own: closing it is part of what is tested
        outcome["left"] = anyio.run(cancel_writers, tmp_path / "cancel.db")
        outcome["closed"] = []

    loop_thread = threading.Thread(target=run, daemon=True)
    loop_thread.start()
    loop_thread.join(60)  # a bound, not a timing: a loop that cannot close never ends
    assert outcome.get("left") == []
    assert "closed" in outcome, "the event loop did not close: a task ignored its cancellation"
