from __future__ import annotations

import hashlib
import json
from typing import Any

import pytest

from toolcrib.catalog import bounds, normalize_catalog, normalize_tool
from toolcrib.catalog._measure import measure
from toolcrib.catalog.normalize import DUPLICATE_REASON
from toolcrib.errors import CatalogRefused

from .conftest import record_of


def _tool(name: str = "t", schema: Any = None, **extra: Any) -> dict[str, Any]:
    return {"name": name, "inputSchema": {"type": "object"} if schema is None else schema, **extra}


def _nested(depth: int) -> dict[str, Any]:
    """An object schema whose JSON nesting (objects and arrays) is exactly ``depth`` levels."""
    schema: dict[str, Any] = {"type": "string"} if depth % 2 else {"type": "string", "enum": ["a"]}
    for _ in range((depth - 1) // 2):
        schema = {"type": "object", "properties": {"x": schema}}
    assert measure(schema, max_bytes=10**6).depth == depth
    return schema


def test_r4_1_real_catalogs_normalize_without_refusals(
    real_catalogs: dict[str, list[dict[str, Any]]],
) -> None:
    for server, tools in real_catalogs.items():
        records = normalize_catalog(server, server, tools)
        assert [r.refused for r in records] == [None] * len(tools), server
        assert [r.name for r in records] == [t["name"] for t in tools]


def test_r4_2_catalog_over_5000_tools_is_refused_whole() -> None:
    with pytest.raises(CatalogRefused) as caught:
        normalize_catalog("acme", "Acme", [_tool(f"t{i}") for i in range(5_001)])
    assert caught.value.code == "catalog_refused"


def test_r4_2_catalog_of_exactly_5000_tools_is_accepted() -> None:
    assert len(normalize_catalog("acme", "Acme", [_tool(f"t{i}") for i in range(5_000)])) == 5_000


def test_r4_2_catalog_over_16_mib_is_refused_by_raw_bytes() -> None:
    with pytest.raises(CatalogRefused):
        normalize_catalog("acme", "Acme", [_tool()], raw_bytes=bounds.MAX_CATALOG_BYTES + 1)


def test_r4_2_catalog_over_16_mib_is_refused_by_measured_size() -> None:
    big = "x" * (1024 * 1024)
    tools = [_tool(f"t{i}", description=big) for i in range(17)]
    with pytest.raises(CatalogRefused):
        normalize_catalog("acme", "Acme", tools)


def test_r4_2_schema_over_256_kib_is_refused_with_a_reason() -> None:
    schema = {"type": "object", "description": "x" * bounds.MAX_SCHEMA_BYTES}
    record = normalize_tool("acme", "Acme", _tool(schema=schema))
    assert record.refused is not None
    assert "262,144 bytes" in record.refused
    assert record.input_schema == {}


def test_r4_2_schema_nested_deeper_than_32_levels_is_refused() -> None:
    record = normalize_tool("acme", "Acme", _tool(schema=_nested(33)))
    assert record.refused is not None
    assert "32 levels" in record.refused


def test_r4_2_schema_nested_exactly_32_levels_is_accepted() -> None:
    assert normalize_tool("acme", "Acme", _tool(schema=_nested(32))).refused is None


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        ("not a tool", "not a JSON object"),
        ({"inputSchema": {"type": "object"}}, "no name"),
        ({"name": "", "inputSchema": {"type": "object"}}, "no name"),
        ({"name": "has space", "inputSchema": {"type": "object"}}, "tool name"),
        ({"name": "ignore_all_previous_instructions", "inputSchema": {}}, "instruction"),
        ({"name": "t"}, "missing"),
        ({"name": "t", "inputSchema": True}, "missing"),
        ({"name": "t", "inputSchema": {"type": "string"}}, "object of arguments"),
        ({"name": "t", "inputSchema": {"properties": ["a"]}}, "'properties'"),
        ({"name": "t", "inputSchema": {"required": "a"}}, "'required'"),
        ({"name": "t", "inputSchema": {"properties": {"a": {"type": "strin"}}}}, "not valid JSON Schema"),
        ({"name": "t", "inputSchema": {"properties": {"a": {"minimum": float("nan")}}}}, "not JSON"),
        ({"name": "t", "inputSchema": {"properties": {"a": {"enum": {1, 2}}}}}, "not JSON"),
    ],
)
def test_r4_2_malformed_tools_are_refused_never_raised(raw: Any, reason: str) -> None:
    record = normalize_tool("acme", "Acme", raw)
    assert record.refused is not None
    assert reason in record.refused


def test_r4_2_duplicate_tool_names_keep_the_first_and_refuse_the_rest() -> None:
    records = normalize_catalog(
        "acme", "Acme", [_tool("t", description="first"), _tool("t", description="second"), _tool("u")]
    )
    assert [(r.name, r.description, r.refused) for r in records] == [
        ("t", "first", None),
        ("t", "second", DUPLICATE_REASON),
        ("u", "", None),
    ]


def test_r4_2_description_is_bounded_to_4000_characters() -> None:
    record = normalize_tool("acme", "Acme", _tool(description="é" * 5_000))
    assert record.description == "é" * bounds.MAX_PROSE_CHARS


def test_r4_3_schema_hash_is_sha256_of_canonical_json() -> None:
    schema = {"type": "object", "properties": {"b": {"type": "string"}, "a": {"type": "integer"}}}
    expected = hashlib.sha256(
        json.dumps(schema, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()
    ).hexdigest()
    assert record_of(schema).schema_hash == expected
    reordered = {"properties": {"a": {"type": "integer"}, "b": {"type": "string"}}, "type": "object"}
    assert record_of(reordered).schema_hash == expected


def test_r4_1_record_is_detached_from_the_raw_definition() -> None:
    raw = _tool(schema={"type": "object", "properties": {"a": {"type": "string"}}})
    record = normalize_tool("acme", "Acme", raw)
    raw["inputSchema"]["properties"]["a"]["type"] = "integer"
    assert record.input_schema["properties"]["a"]["type"] == "string"


def test_r4_1_annotations_and_output_schema_are_kept() -> None:
    raw = _tool(annotations={"readOnlyHint": True}, outputSchema={"type": "object"})
    record = normalize_tool("acme", "Acme", raw)
    assert record.annotations == {"readOnlyHint": True}
    assert record.output_schema == {"type": "object"}
    assert record.public_name == "acme__t"
