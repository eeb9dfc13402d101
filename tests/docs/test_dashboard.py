"""#24: the Grafana dashboard and the operating page query only series that exist.

The series are read from the registry ``/metrics`` renders (``web/telemetry.py``), plus the four
series of the audit stream (R-11.4); a panel or an alert naming anything else would be an empty
graph or an alert that never fires.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

from tests.conftest import ROOT

from toolcrib.web.telemetry import Telemetry

DASHBOARD = ROOT / "docs" / "grafana" / "toolcrib.json"
OPERATING = ROOT / "docs" / "operating.md"
STREAM = {
    "toolcrib_audit_stream_pending",
    "toolcrib_audit_stream_lag_seconds",
    "toolcrib_audit_stream_delivered_total",
    "toolcrib_audit_stream_failures_total",
}
_SERIES = re.compile(r"\btoolcrib_[a-z0-9_]+")


def defined_series() -> set[str]:
    """Every series name the telemetry registry exposes (a histogram's three, a counter's _total)."""
    names: set[str] = set()
    for family in Telemetry().registry.collect():
        if family.type == "counter":
            names.add(family.name + "_total")
        elif family.type == "histogram":
            names.update(family.name + suffix for suffix in ("_bucket", "_count", "_sum"))
        else:
            names.add(family.name)
    return names


def _queries(node: Any) -> Iterator[str]:
    """Every PromQL text in the dashboard: panel targets and template variable queries."""
    if isinstance(node, dict):
        for key, value in node.items():
            promql = key in ("expr", "definition") or (key == "query" and "toolcrib_" in str(value))
            if promql and isinstance(value, str):
                yield value
            else:
                yield from _queries(value)
    elif isinstance(node, list):
        for item in node:
            yield from _queries(item)


def _balanced(text: str) -> bool:
    depth = {"(": 0, "{": 0, "[": 0}
    closing = {")": "(", "}": "{", "]": "["}
    for char in text:
        if char in depth:
            depth[char] += 1
        elif char in closing:
            depth[closing[char]] -= 1
            if depth[closing[char]] < 0:
                return False
    return all(v == 0 for v in depth.values())


def test_the_dashboard_names_only_series_that_metrics_defines() -> None:
    known = defined_series() | STREAM
    dashboard = json.loads(DASHBOARD.read_text(encoding="utf-8"))
    queries = list(_queries(dashboard))
    assert len(queries) >= 10
    named = {name for query in queries for name in _SERIES.findall(query)}
    assert named - known == set()
    for query in queries:
        assert _SERIES.search(query), query
        assert _balanced(query), query


def test_the_dashboard_shows_every_series() -> None:
    dashboard = json.loads(DASHBOARD.read_text(encoding="utf-8"))
    named = {name for query in _queries(dashboard) for name in _SERIES.findall(query)}
    shown = {name.removesuffix("_bucket") for name in named}
    wanted = {
        name.removesuffix("_bucket") for name in defined_series() if not name.endswith(("_count", "_sum"))
    }
    assert (wanted | STREAM) - shown == set()


def test_the_dashboard_is_grafana_json_with_unique_panels_and_exemplars_on_latency() -> None:
    dashboard = json.loads(DASHBOARD.read_text(encoding="utf-8"))
    panels = dashboard["panels"]
    ids = [p["id"] for p in panels]
    assert len(ids) == len(set(ids))
    assert {"datasource", "instance"} <= {v["name"] for v in dashboard["templating"]["list"]}
    latency = [
        t for p in panels for t in p.get("targets", []) if "toolcrib_tool_call_seconds_bucket" in t["expr"]
    ]
    assert latency
    assert all(t.get("exemplar") is True for t in latency)


def test_the_operating_page_alerts_only_on_series_that_exist() -> None:
    text = OPERATING.read_text(encoding="utf-8")
    blocks = re.findall(r"^```promql\n(.*?)^```", text, re.S | re.M)
    assert len(blocks) >= 5
    known = defined_series() | STREAM
    for block in blocks:
        named = set(_SERIES.findall(block))
        assert named, block
        assert named - known == set(), block
        assert _balanced(block), block
