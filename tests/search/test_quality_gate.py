"""The quality gates (issue #4): the engine, lexical only, on the evaluation sets.

intents_dev carries the issue's targets; LiveMCPBench R@5 and the two no-tool sets guard the
long-query trade of the relevance floor (docs/search.md) against regression.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from tests.search.conftest import DATA

from toolcrib.search import SearchDoc, SearchIndex
from toolcrib.search.evaluate import group_recall, metrics, public_id, rank_queries, reciprocal_rank


def _figures(index: SearchIndex, catalog: dict[str, list[SearchDoc]], name: str) -> dict[str, Any]:
    with (DATA / name).open(encoding="utf-8") as handle:
        rows = [json.loads(line) for line in handle if line.strip()]
    return metrics(rank_queries(index, catalog, rows))


def test_r5_3_dev_set_meets_the_issue_targets(
    catalog_index: SearchIndex, catalog: dict[str, list[SearchDoc]]
) -> None:
    figures = _figures(catalog_index, catalog, "intents_dev.jsonl")
    # Measured 0.943 / 0.981 / 0.981 / 1.000 (docs/search.md).
    assert figures["hit@1"] >= 0.92
    assert figures["hit@3"] >= 0.97
    assert figures["positives_non_empty"] >= 0.97
    assert figures["negatives_empty"] >= 0.92


@pytest.mark.parametrize(
    ("name", "metric", "at_least"),
    [
        # Measured 0.179 (0.042 before name coverage and companions; plain BM25 0.34).
        ("livemcpbench/queries.jsonl", "r@5", 0.17),
        # Measured 0.960 and 0.789 (0.985 and 0.947 before): what name coverage costs them.
        ("negatives/metatool_no_tool.jsonl", "negatives_empty", 0.95),
        ("negatives/livemcpbench_leave_servers_out.jsonl", "negatives_empty", 0.77),
    ],
)
def test_r5_3_long_query_sets_hold_their_measured_figures(
    catalog_index: SearchIndex, catalog: dict[str, list[SearchDoc]], name: str, metric: str, at_least: float
) -> None:
    assert _figures(catalog_index, catalog, name)[metric] >= at_least


def test_metric_helpers() -> None:
    assert public_id("git/git_log") == "git__git_log"
    assert reciprocal_rank(["a", "b"], frozenset({"b"})) == 0.5
    assert group_recall(["a", "b"], [frozenset({"a"}), frozenset({"z"})]) == 0.5
