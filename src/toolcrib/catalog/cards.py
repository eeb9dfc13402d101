"""Cards: the small, lossy, sanitized view of a tool the model reads (R-4.5, R-4.6, R-4.8).

A card is never used to validate. When it cannot express every requirement of the exact
schema it says so with ``complete: false``; it never pretends otherwise.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

import toolcrib.catalog.bounds as bounds
from toolcrib.catalog._schema import properties, required, type_label
from toolcrib.catalog.budget import shrink_card
from toolcrib.catalog.records import ExactRecord
from toolcrib.catalog.sanitize import sanitize_text

__all__ = ["build_card", "card_is_complete", "project_input"]

_COMBINATORS = (
    "oneOf",
    "anyOf",
    "allOf",
    "not",
    "if",
    "dependentRequired",
    "dependentSchemas",
    "dependencies",
)
_LABEL_CHARS = 60


def build_card(record: ExactRecord, *, risk: str, frozen: Collection[str] = ()) -> dict[str, Any]:
    """The stored card of a tool, at most 8 KiB; the gateway adds ``action_id`` and ``confidence``.

    Inputs are the non-frozen top-level parameters by alias, required ones first, at most 32.
    """
    names = [exact for exact in record.aliases.values() if exact not in frozen]
    needed = set(required(record.input_schema))
    ordered = [n for n in names if n in needed] + [n for n in names if n not in needed]
    aliases = {exact: alias for alias, exact in record.aliases.items()}
    props = properties(record.input_schema)
    inputs = [
        project_input(aliases[n], props.get(n), required=n in needed)
        for n in ordered[: bounds.MAX_PROJECTED_INPUTS]
    ]
    card: dict[str, Any] = {
        "name": record.public_name,
        "connector": sanitize_text(record.connector, _LABEL_CHARS),
        "account": record.account,
        "description": sanitize_text(record.description, bounds.CARD_DESCRIPTION_CHARS),
        "risk": risk,
        "inputs": inputs,
        "complete": card_is_complete(record, frozen=frozen),
    }
    stored = shrink_card(card, bounds.MAX_CARD_BYTES)
    if stored is None:  # only a pathological name or label could do this; keep the bare card
        return {**card, "description": "", "inputs": [], "complete": False}
    return stored


def card_is_complete(record: ExactRecord, *, frozen: Collection[str] = ()) -> bool:
    """Whether a card can express every requirement of the exact schema (R-4.6)."""
    schema = record.input_schema
    if any(key in schema for key in _COMBINATORS):
        return False
    names = [exact for exact in record.aliases.values() if exact not in frozen]
    if len(names) > bounds.MAX_PROJECTED_INPUTS:
        return False
    props = properties(schema)
    return all(name in props and _expressible(props[name]) for name in required(schema) if name not in frozen)


def project_input(alias: str, prop: Any, *, required: bool) -> dict[str, Any]:
    """One input of a card: alias, type, required, short description, a few enum values, default."""
    entry: dict[str, Any] = {"name": alias, "type": type_label(prop), "required": required}
    if not isinstance(prop, dict):
        return entry
    description = sanitize_text(prop.get("description"), bounds.INPUT_DESCRIPTION_CHARS)
    if description:
        entry["description"] = description
    enum = prop.get("enum")
    if isinstance(enum, list):
        shown = [v for v in enum if _showable(v)][: bounds.MAX_ENUM_VALUES]
        if shown:
            entry["enum"] = shown
    if "default" in prop and _showable(prop["default"]):
        entry["default"] = prop["default"]
    return entry


def _expressible(prop: Any) -> bool:
    """A required parameter a card can show whole: a scalar or an array of scalars."""
    if not isinstance(prop, dict):
        return prop is True
    if any(key in prop for key in (*_COMBINATORS, "$ref", "properties", "patternProperties")):
        return False
    kind = type_label(prop)
    if "object" in kind.split("|"):
        return False
    if "array" in kind.split("|"):
        items = prop.get("items", {})
        return items is True or (isinstance(items, dict) and _expressible(items))
    return True


def _showable(value: Any) -> bool:
    """An enum value or default shown verbatim: a short scalar that sanitization leaves intact."""
    if value is None or isinstance(value, bool | int | float):
        return len(str(value)) <= bounds.MAX_VALUE_CHARS
    if isinstance(value, str):
        return len(value) <= bounds.MAX_VALUE_CHARS and sanitize_text(value, bounds.MAX_VALUE_CHARS) == value
    return False
