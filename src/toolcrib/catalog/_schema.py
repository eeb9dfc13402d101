"""Reading the top level of an input schema, safely: the schema may be anything a server sent."""

from __future__ import annotations

from typing import Any

from toolcrib.catalog.records import ExactRecord

__all__ = [
    "is_open",
    "properties",
    "required",
    "reverse_aliases",
    "top_level_names",
    "type_label",
]

_JSON_TYPES = frozenset({"string", "number", "integer", "boolean", "object", "array", "null"})


def properties(schema: Any) -> dict[str, Any]:
    """The top-level ``properties``, or an empty mapping when there is none usable."""
    props = schema.get("properties") if isinstance(schema, dict) else None
    return props if isinstance(props, dict) else {}


def required(schema: Any) -> list[str]:
    """The top-level ``required`` names, in order, without duplicates."""
    names = schema.get("required") if isinstance(schema, dict) else None
    if not isinstance(names, list):
        return []
    return list(dict.fromkeys(n for n in names if isinstance(n, str)))


def top_level_names(schema: Any) -> list[str]:
    """Every top-level parameter: declared properties, then required names not declared."""
    return list(dict.fromkeys([*properties(schema), *required(schema)]))


def is_open(schema: Any) -> bool:
    """Whether the schema explicitly accepts argument names it does not declare."""
    if not isinstance(schema, dict):
        return False
    extra = schema.get("additionalProperties")
    return bool(schema.get("patternProperties")) or extra is True or (isinstance(extra, dict) and extra != {})


def type_label(prop: Any) -> str:
    """A short type for a card or a needs_input entry: a JSON type, ``a|b``, or ``any``."""
    if not isinstance(prop, dict):
        return "any"
    declared = prop.get("type")
    if isinstance(declared, str) and declared in _JSON_TYPES:
        return declared
    if isinstance(declared, list):
        names = [t for t in declared if isinstance(t, str) and t in _JSON_TYPES]
        if names and len(names) == len(declared):
            return "|".join(dict.fromkeys(names))
    if "properties" in prop:
        return "object"
    if "items" in prop or "prefixItems" in prop:
        return "array"
    return "any"


def reverse_aliases(record: ExactRecord) -> dict[str, str]:
    """Exact provider name -> alias."""
    return {exact: alias for alias, exact in record.aliases.items()}
