"""Pinned tool definitions (SPEC R-13.4): what a sync does with a tool whose definition changed.

A prompt of a connection is pinned the same way (:func:`prompt_definition`), compared each time
the gateway reads the server's prompt listing; below, "tool" stands for either.

A server can change a tool after it was trusted: "Sync the contacts of a mailing list" becomes an
instruction to export every report to an outside address. So the definition the model reads and
the gateway validates against (description, input schema, annotations) is pinned when accepted,
and a sync that brings another one holds the tool until an admin who has seen the difference
accepts it. This module only decides (pure, no I/O): the store applies its plan in the same
transaction as the catalog it belongs to.

The connection's ``pinning`` mode says what happens to a tool new to a connection already synced:
``accept`` (the default) pins it as accepted, ``review`` holds it like a change, ``off`` pins
every definition as it comes (nothing is ever held). A connection's first sync (no pins yet)
accepts everything: there is nothing to compare with.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from toolcrib.catalog.records import ExactRecord, canonical_json

__all__ = ["MODES", "Pin", "PinPlan", "changed", "definition", "digest", "plan", "prompt_definition"]

MODES = ("accept", "review", "off")


def definition(record: ExactRecord) -> dict[str, Any]:
    """What is pinned of a tool: everything of it the model reads or the gateway checks against."""
    return {
        "description": record.description,
        "inputSchema": record.input_schema,
        "annotations": record.annotations,
    }


def prompt_definition(prompt: Mapping[str, Any]) -> dict[str, Any]:
    """What is pinned of a prompt (the ``Prompt`` of a ``prompts/list``, as JSON): what the person's
    client shows of it and fills in, its description and its arguments (its name is the pin's key).
    A prompt's messages are not pinned: they are made at each ``prompts/get``, like a tool's result."""
    return {"description": prompt.get("description"), "arguments": prompt.get("arguments") or []}


def digest(defn: Mapping[str, Any]) -> str:
    """SHA-256 of a definition's canonical JSON (the form R-4.3 hashes schemas in)."""
    return hashlib.sha256(canonical_json(defn).encode("utf-8")).hexdigest()


@dataclass(frozen=True, slots=True)
class Pin:
    """One tool's pin: the accepted definition (None: a new tool under review), the one offered
    instead while the tool is held, and the offered digest an admin rejected."""

    tool: str
    accepted: dict[str, Any] | None = None
    accepted_sha256: str | None = None
    offered: dict[str, Any] | None = None
    offered_sha256: str | None = None
    rejected_sha256: str | None = None
    changed_at: float | None = None

    @property
    def held(self) -> bool:
        return self.offered_sha256 is not None


@dataclass(slots=True)
class PinPlan:
    """What a sync writes: pins to store (insert or replace), pins to drop, and the held tools."""

    write: list[Pin] = field(default_factory=list)
    drop: list[str] = field(default_factory=list)
    held: set[str] = field(default_factory=set)


def plan(
    pins: Mapping[str, Pin], offered: Mapping[str, tuple[dict[str, Any], str]], *, mode: str, now: float
) -> PinPlan:
    """The pins after a sync offering ``offered`` (tool -> (definition, digest)).

    A tool whose definition is the accepted one is released (a change that went back is no change);
    one whose definition differs is held with the new one as offered (its ``changed_at`` kept
    while the offer stays the same, and a rejection standing until another definition comes).
    """
    out = PinPlan()
    trust_all = mode == "off" or not pins
    for tool, (defn, sha) in offered.items():
        pin = pins.get(tool)
        if trust_all or (pin is None and mode != "review"):
            if pin is None or pin.accepted_sha256 != sha or pin.held:
                out.write.append(Pin(tool, defn, sha))
            continue
        if pin is not None and pin.accepted_sha256 == sha:
            if pin.held:
                out.write.append(Pin(tool, pin.accepted, sha))
            continue
        out.held.add(tool)
        base = pin or Pin(tool)
        if base.offered_sha256 != sha:
            out.write.append(replace(base, offered=defn, offered_sha256=sha, changed_at=now))
    for tool, pin in pins.items():
        if tool in offered:
            continue
        if pin.accepted_sha256 is None:
            out.drop.append(tool)  # a new tool no longer offered: nothing was ever accepted
        elif pin.held:
            out.write.append(Pin(tool, pin.accepted, pin.accepted_sha256))  # its change left with it
    return out


def changed(pins: Mapping[str, Pin], offered: Mapping[str, tuple[dict[str, Any], str]]) -> set[str]:
    """The tools whose offered definition is not the one accepted: what searches learned of them
    (R-5.12) was learned of another tool, so a sync drops it, held or not (pinning ``off``)."""
    return {
        tool
        for tool, (_, sha) in offered.items()
        if (pin := pins.get(tool)) is not None
        and pin.accepted_sha256 is not None
        and pin.accepted_sha256 != sha
    }
