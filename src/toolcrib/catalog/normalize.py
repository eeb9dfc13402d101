"""Upstream tool definitions -> exact records, within the limits of R-4.2 (R-4.1, R-4.3, R-4.4).

A whole catalog over the limits raises :class:`CatalogRefused` (the sync fails, the previous
catalog stays). One bad tool never does: it becomes a record with ``refused`` set, kept out of
search and execution and shown to admins with its reason.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

import toolcrib.catalog.bounds as bounds
from toolcrib.catalog._lures import is_lure
from toolcrib.catalog._measure import measure
from toolcrib.catalog._schema import top_level_names
from toolcrib.catalog.aliases import build_aliases
from toolcrib.catalog.records import ExactRecord, schema_hash
from toolcrib.catalog.validation import schema_problem
from toolcrib.errors import CatalogRefused

__all__ = ["normalize_catalog", "normalize_tool"]

_TOOL_NAME = re.compile(rf"[A-Za-z0-9_.\-]{{1,{bounds.MAX_TOOL_NAME_CHARS}}}")
_UNSAFE_NAME_CHARS = re.compile(r"[^A-Za-z0-9_.\-]+")
_MAX_ANNOTATION_BYTES = 16 * 1024
DUPLICATE_REASON = "duplicate tool name: the first definition in the catalog is kept"


def normalize_catalog(
    account: str,
    connector: str,
    tools: Sequence[Mapping[str, Any]],
    *,
    raw_bytes: int | None = None,
) -> list[ExactRecord]:
    """Normalize a connection's whole catalog; refuse it whole when over R-4.2's limits.

    ``raw_bytes`` is the size of the catalog as received, when the transport knows it;
    otherwise the size of its compact JSON is measured. Of tools sharing a name, the first
    is kept and the others are refused.
    """
    if isinstance(tools, str | bytes) or not isinstance(tools, Sequence):
        raise CatalogRefused("the catalog is not a list of tools")
    if len(tools) > bounds.MAX_CATALOG_TOOLS:
        raise CatalogRefused(f"the catalog lists {len(tools):,} tools, over the limit of 5,000")
    size = raw_bytes if raw_bytes is not None else measure(tools, max_bytes=bounds.MAX_CATALOG_BYTES).size
    if size > bounds.MAX_CATALOG_BYTES:
        raise CatalogRefused(f"the catalog is over the limit of 16 MiB ({size:,} bytes)")
    records: list[ExactRecord] = []
    seen: set[str] = set()
    for raw in tools:
        record = normalize_tool(account, connector, raw)
        if record.name in seen:
            record = dataclasses.replace(record, refused=DUPLICATE_REASON)
        seen.add(record.name)
        records.append(record)
    return records


def normalize_tool(account: str, connector: str, raw: Any) -> ExactRecord:
    """One upstream tool -> its exact record; a tool over the limits is refused, never raised."""
    if not isinstance(raw, Mapping):
        return _refused(account, connector, None, "the tool definition is not a JSON object")
    name = raw.get("name")
    if not isinstance(name, str) or not name:
        return _refused(account, connector, None, "the tool has no name")
    if not _TOOL_NAME.fullmatch(name):
        return _refused(account, connector, name, "the tool name is not 1-128 letters, digits, '_', '-', '.'")
    if is_lure(name):
        return _refused(account, connector, name, "the tool name reads as an instruction to the model")
    schema = raw.get("inputSchema", raw.get("input_schema"))
    problem = _schema_problem(schema)
    if problem:
        return _refused(account, connector, name, f"input schema: {problem}")
    assert isinstance(schema, dict)
    description = raw.get("description")
    return ExactRecord(
        account=account,
        connector=connector,
        name=name,
        description=description[: bounds.MAX_PROSE_CHARS] if isinstance(description, str) else "",
        input_schema=_copy(schema),
        schema_hash=schema_hash(schema),
        aliases=build_aliases(top_level_names(schema)),
        output_schema=_bounded_object(raw.get("outputSchema"), bounds.MAX_SCHEMA_BYTES),
        annotations=_bounded_object(raw.get("annotations"), _MAX_ANNOTATION_BYTES) or {},
    )


def _schema_problem(schema: Any) -> str | None:
    if not isinstance(schema, dict):
        return "missing, or not a JSON object"
    size = measure(schema, max_bytes=bounds.MAX_SCHEMA_BYTES, max_depth=bounds.MAX_SCHEMA_DEPTH)
    if size.problem:
        return f"not JSON ({size.problem})"
    if size.size > bounds.MAX_SCHEMA_BYTES:
        return f"over the limit of {bounds.MAX_SCHEMA_BYTES:,} bytes"
    if size.depth > bounds.MAX_SCHEMA_DEPTH:
        return f"nested deeper than {bounds.MAX_SCHEMA_DEPTH} levels"
    declared = schema.get("type", "object")
    if declared != "object" and not (isinstance(declared, list) and "object" in declared):
        return "does not describe an object of arguments"
    if "properties" in schema and not isinstance(schema["properties"], dict):
        return "'properties' is not an object"
    required = schema.get("required", [])
    if not isinstance(required, list) or not all(isinstance(r, str) for r in required):
        return "'required' is not a list of names"
    return schema_problem(schema)


def _bounded_object(value: Any, max_bytes: int) -> dict[str, Any] | None:
    if not isinstance(value, dict):
        return None
    size = measure(value, max_bytes=max_bytes, max_depth=bounds.MAX_SCHEMA_DEPTH)
    if size.problem or size.size > max_bytes or size.depth > bounds.MAX_SCHEMA_DEPTH:
        return None
    return _copy(value)


def _copy(value: dict[str, Any]) -> dict[str, Any]:
    """A deep copy in JSON's own terms (property order kept), detached from the caller's data."""
    copied: dict[str, Any] = json.loads(json.dumps(value, ensure_ascii=False))
    return copied


def _refused(account: str, connector: str, name: str | None, reason: str) -> ExactRecord:
    shown = _UNSAFE_NAME_CHARS.sub("_", name)[: bounds.MAX_TOOL_NAME_CHARS] if name else "(unnamed)"
    return ExactRecord(
        account=account,
        connector=connector,
        name=shown,
        description="",
        input_schema={},
        schema_hash=schema_hash({}),
        aliases={},
        refused=reason,
    )
