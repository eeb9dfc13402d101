"""Pinned prompt definitions (R-13.4): a prompt changed at its server is held like a tool.

Each time the gateway reads a connection's prompt listing (``prompts/list``, and ``prompts/get``,
which looks the prompt up in it), every prompt's definition (description, arguments) is compared
with its pin under the connection's ``pinning`` mode (``catalog.pins``), and what changed is
written (``store.pins``, kind ``prompt``: a prompt never shares a pin with a tool of its name). A
held prompt is not listed, and getting it answers ``tool_changed``, as running a held tool does,
until an admin accepts the change (``tools changes``, then ``tools accept ACCOUNT prompt:NAME``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import anyio

from toolcrib.catalog import pins
from toolcrib.errors import ToolChanged
from toolcrib.store import pins as store
from toolcrib.store.connections import ConnectionRow
from toolcrib.store.database import Database

__all__ = ["held_prompts", "prompt_changed"]


def _offered(items: Sequence[Mapping[str, Any]]) -> dict[str, tuple[dict[str, Any], str]]:
    offered: dict[str, tuple[dict[str, Any], str]] = {}
    for item in items:
        name = item.get("name")
        if isinstance(name, str) and name:
            defn = pins.prompt_definition(item)
            offered[name] = (defn, pins.digest(defn))
    return offered


async def held_prompts(
    db: Database, row: ConnectionRow, items: Sequence[Mapping[str, Any]], now: float
) -> set[str]:
    """The names of ``row``'s listed prompts held for review (none when pinning is ``off``: the
    pins then follow every definition as it comes, as a tool's do)."""
    offered = await anyio.to_thread.run_sync(_offered, items)  # the listing is the upstream's
    return await store.sync_pins(db, row.name, "prompt", offered, mode=row.pinning, now=now)


def prompt_changed(name: str) -> ToolChanged:
    """What getting a held prompt answers: a held tool's code (R-13.4)."""
    return ToolChanged(
        f"{name} changed at its server since it was accepted: it can be got again once an admin "
        "accepts the change"
    )
