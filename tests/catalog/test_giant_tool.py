"""R-4.9: the regression fixture through the real normalization, card, budget and mapping code."""

from __future__ import annotations

import pytest

from tests.fixtures.giant_tool import LURE_MARKERS, giant_tool_definition, valid_giant_arguments
from toolcrib.catalog import (
    ExactRecord,
    build_card,
    check_required,
    compact_json,
    fit_search_response,
    json_size,
    map_arguments,
    normalize_catalog,
    validate_arguments,
)
from toolcrib.gateway.discovery.surface import meta_tool_definitions

PUBLISHED_SURFACE_BYTES = 5_062


@pytest.fixture(scope="module")
def record() -> ExactRecord:
    [record] = normalize_catalog("crm", "CRM", [giant_tool_definition()])
    assert record.refused is None
    return record


def _surface(record: ExactRecord) -> str:
    card = {**build_card(record, risk="write"), "action_id": "act_" + "A" * 26, "confidence": "high"}
    response = fit_search_response([card], restricted=[])
    return compact_json(meta_tool_definitions("search")) + compact_json(response)


def test_r4_9_fixture_is_about_217_kb_with_300_string_parameters() -> None:
    definition = giant_tool_definition()
    assert 210_000 <= json_size(definition) <= 225_000
    props = definition["inputSchema"]["properties"]
    assert len(props) == 300
    assert all(p["type"] == "string" and len(p["description"].encode()) >= 600 for p in props.values())
    assert giant_tool_definition() == definition


def test_r4_9_model_facing_surface_is_under_the_published_5062_bytes(record: ExactRecord) -> None:
    surface = _surface(record)
    assert len(surface.encode()) < PUBLISHED_SURFACE_BYTES
    assert len(surface.encode()) <= 3_000


def test_r4_9_no_lure_text_reaches_the_surface(record: ExactRecord) -> None:
    surface = _surface(record).lower()
    assert [marker for marker in LURE_MARKERS if marker.lower() in surface] == []


def test_r4_9_card_keeps_32_of_300_inputs_and_says_it_is_incomplete(record: ExactRecord) -> None:
    card = build_card(record, risk="write")
    assert len(card["inputs"]) == 32
    assert card["complete"] is False
    assert [i["name"] for i in card["inputs"] if i["required"]] == [
        f"field_{n:03d}" for n in range(0, 300, 50)
    ]


def test_r4_9_valid_aliased_arguments_reach_upstream_with_exact_provider_names(record: ExactRecord) -> None:
    arguments = valid_giant_arguments(record.aliases)
    assert any(alias.startswith("param_") for alias in arguments)
    exact = map_arguments(record, arguments)
    assert set(exact) == {record.aliases[alias] for alias in arguments}
    assert {"Field-001", "record.attr_002", "customAttribute003", "meta data 004"} <= set(exact)
    check_required(record, exact)
    validate_arguments(record, exact)
