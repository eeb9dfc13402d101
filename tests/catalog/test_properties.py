"""Property-based tests: hostile schemas never break normalization, limits, budgets or aliases."""

from __future__ import annotations

import unicodedata
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toolcrib.catalog import (
    bounds,
    build_card,
    fit_search_response,
    json_size,
    map_arguments,
    normalize_tool,
    sanitize_text,
    validate_arguments,
)
from toolcrib.catalog._measure import measure
from toolcrib.catalog.aliases import ALIAS_PATTERN
from toolcrib.errors import InvalidArguments

from .conftest import load_lures

FAST = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
_JUNK_TYPES = st.sampled_from(
    ["string", "integer", "object", "array", "strin", 7, None, ["string", "null"], {}]
)
names = st.one_of(
    st.from_regex(r"[a-z][a-z0-9_]{0,45}", fullmatch=True),
    st.sampled_from(["param_01", "param_02", "Param_01", "has space", "a.b", "ünï", "数据", "", "x" * 41]),
    st.text(min_size=1, max_size=20),
)
json_scalars = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text(max_size=30)
)
json_values = st.recursive(
    json_scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=20,
)
prop_schemas = st.one_of(
    st.booleans(),
    st.fixed_dictionaries(
        {"type": _JUNK_TYPES},
        optional={"description": st.text(max_size=200), "enum": st.lists(json_scalars, max_size=12)},
    ),
    st.just({"$ref": "#/$defs/loop"}),
    st.just({"enum": list(range(10_000))}),
    st.just({"type": "string", "description": "y" * 300_000}),
    json_values,
)


def _deep(depth: int) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "string"}
    for _ in range(depth):
        schema = {"type": "object", "properties": {"x": schema}}
    return schema


schemas = st.one_of(
    st.builds(
        lambda props, required, extra: {"type": "object", "properties": props, "required": required, **extra},
        st.dictionaries(names, prop_schemas, max_size=40),
        st.lists(names, max_size=5),
        st.sampled_from([{}, {"$defs": {"loop": {"$ref": "#/$defs/loop"}}}, {"anyOf": [{}]}, {"$schema": 5}]),
    ),
    st.integers(min_value=10, max_value=40).map(_deep),
    json_values,
)
tools = st.one_of(
    st.fixed_dictionaries(
        {"name": names, "description": st.one_of(st.text(max_size=300), json_values), "inputSchema": schemas}
    ),
    json_values,
)


@FAST
@given(tools)
def test_r4_2_normalization_never_raises_and_every_limit_holds(raw: Any) -> None:
    record = normalize_tool("acme", "Acme", raw)
    if record.refused is not None:
        assert record.input_schema == {}
        return
    size = measure(record.input_schema, max_bytes=10**9)
    assert size.size <= bounds.MAX_SCHEMA_BYTES
    assert size.depth <= bounds.MAX_SCHEMA_DEPTH
    assert len(record.description) <= bounds.MAX_PROSE_CHARS
    assert all(ALIAS_PATTERN.fullmatch(alias) for alias in record.aliases)
    assert len(set(record.aliases.values())) == len(record.aliases)


@FAST
@given(tools, st.integers(min_value=1, max_value=7))
def test_r5_9_cards_and_search_responses_keep_every_budget(raw: Any, copies: int) -> None:
    record = normalize_tool("acme", "Acme", raw)
    if record.refused is not None:
        return
    card = build_card(record, risk="read")
    assert json_size(card) <= bounds.MAX_CARD_BYTES
    assert len(card["inputs"]) <= bounds.MAX_PROJECTED_INPUTS
    assert card["complete"] is False or len(record.aliases) <= bounds.MAX_PROJECTED_INPUTS
    cards = [{**card, "action_id": f"act_{i:026d}", "confidence": "low"} for i in range(copies)]
    response = fit_search_response(cards, restricted=[f"x__{i}" for i in range(40)])
    assert json_size(response) <= bounds.SEARCH_RESPONSE_BYTES
    assert len(response["results"]) <= bounds.SEARCH_MAX_CARDS
    assert all(json_size(c) <= bounds.SEARCH_CARD_BYTES for c in response["results"])


@FAST
@given(tools)
def test_r4_4_every_alias_map_round_trips(raw: Any) -> None:
    record = normalize_tool("acme", "Acme", raw)
    if record.refused is not None:
        return
    by_alias = {alias: i for i, alias in enumerate(record.aliases)}
    assert map_arguments(record, by_alias) == {record.aliases[a]: i for a, i in by_alias.items()}
    by_exact = {exact: i for i, exact in enumerate(record.aliases.values())}
    assert map_arguments(record, by_exact) == by_exact


@FAST
@given(tools, st.dictionaries(st.text(max_size=10), json_values, max_size=5))
def test_step12_validation_only_ever_answers_invalid_arguments(raw: Any, arguments: dict[str, Any]) -> None:
    record = normalize_tool("acme", "Acme", raw)
    if record.refused is not None:
        return
    errors: list[dict[str, str]] = []
    try:
        validate_arguments(record, arguments)
    except InvalidArguments as exc:
        errors = exc.errors
    assert len(errors) <= 10


_SAFE_TEXT = st.text(alphabet=st.sampled_from("abcdefgh xyz,"), max_size=60)


@FAST
@given(_SAFE_TEXT, st.sampled_from(load_lures()), _SAFE_TEXT, st.integers(min_value=1, max_value=400))
def test_r4_7_a_lure_between_any_benign_text_never_survives(
    before: str, lure: dict[str, str], after: str, max_chars: int
) -> None:
    out = sanitize_text(f"{before}. {lure['text']} {after}", max_chars)
    assert len(out) <= max_chars
    assert (
        unicodedata.normalize("NFKC", lure["marker"]).lower()
        not in unicodedata.normalize("NFKC", out).lower()
    )


@FAST
@given(st.text(max_size=500), st.integers(min_value=0, max_value=300))
def test_r4_7_sanitized_text_is_bounded_and_has_no_invisible_characters(text: str, max_chars: int) -> None:
    out = sanitize_text(text, max_chars)
    assert len(out) <= max_chars
    assert not any(c in out for c in "\u200b\u200c\u200d\u2060\ufeff\u202e\x00\x1b\n\t")
