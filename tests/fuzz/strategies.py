"""Hypothesis strategies: arguments for every control-plane operation and both meta-tools.

Each call gets, per declared property, nothing, a value of the declared type (often a name that
exists, so handlers run past their lookups) or any JSON at all; plus unknown keys; or arguments
that are not an object. Values include huge strings, deep nesting, big numbers and odd Unicode.
Commands and URLs of ``connections__create`` point nowhere: the fuzz never starts a real program
or reaches past loopback.
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from toolcrib.gateway.control import OPERATIONS

ODD_TEXT = (
    "",
    " ",
    "\x00",
    "\u202eevil",
    "\ufeffbom",
    "😀" * 3,
    "\U0010ffff",
    "\ud800",  # a lone surrogate: valid JSON text (escaped), not encodable as UTF-8
    "fz-member\udfff",
    "e\u0301",
    "ǅ",
    "../../etc/passwd",
    "' OR 1=1 --",
    "%s%n",
    "a" * 100_000,
    "é" * 40_000,
    "[bold]x[/bold]",
    "desk__add_numbers",
)
BIG_NUMBERS = (10**100, -(10**100), 2**63, -(2**63) - 1, 1e308, -1e308, 5e-324, 0.5, -1)


def nested(depth: int, leaf: Any = 1) -> Any:
    value = leaf
    for i in range(depth):
        value = [value] if i % 2 else {"k": value}
    return value


DEEP = (nested(40), nested(120), nested(400))

text = st.one_of(st.text(max_size=40), st.sampled_from(ODD_TEXT))
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=False, allow_infinity=False),
    st.sampled_from(BIG_NUMBERS),
    text,
)
json_values = st.one_of(
    st.recursive(
        scalars,
        lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
        max_leaves=8,
    ),
    st.sampled_from(DEEP),
)


def _typed(kind: str, names: tuple[str, ...]) -> st.SearchStrategy[Any]:
    if kind == "integer":
        return st.one_of(st.integers(), st.sampled_from(BIG_NUMBERS).filter(lambda n: isinstance(n, int)))
    if kind == "number":
        return st.one_of(st.integers(), st.floats(allow_nan=False), st.sampled_from(BIG_NUMBERS))
    if kind == "object":
        return st.dictionaries(st.text(max_size=8), json_values, max_size=4)
    return st.one_of(text, st.sampled_from(names)) if names else text


def _safe(name: str, key: str, value: Any) -> Any:
    """Never a real program or a host past loopback; never the fuzz's own owner; never a rate
    limit low enough to stop the fuzz's own calls (hostile counts stay hostile)."""
    if key in ("per_minute", "per_day") and type(value) in (int, float) and 0 < value < 10**6:
        return value + 10**6
    if not isinstance(value, str):
        return value
    if key == "command":
        return "/nonexistent/toolcrib-fuzz " + value
    if key == "url":
        return "http://127.0.0.1:9/" + value
    return value + "_" if value == "owner" else value


@st.composite
def arguments_for(draw: st.DrawFn, name: str, schema: dict[str, Any], names: tuple[str, ...]) -> Any:
    if draw(st.integers(0, 19)) == 0:  # arguments that are not an object at all
        return draw(st.one_of(st.lists(scalars, max_size=3), scalars))
    out: dict[str, Any] = {}
    for key, spec in schema.get("properties", {}).items():
        how = draw(st.integers(0, 5))
        if how == 0:
            continue
        value = draw(json_values) if how == 1 else draw(_typed(spec.get("type", "string"), names))
        out[key] = _safe(name, key, value)
    for key, value in draw(st.dictionaries(st.text(max_size=10), json_values, max_size=2)).items():
        out.setdefault(key, value)
    return out


CONTROL_SCHEMAS = {f"{op.resource}__{op.operation}": op.input_schema for op in OPERATIONS}
