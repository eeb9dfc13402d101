"""What the organization taught search never costs a request it has not seen (R-5.12, #31 item 3).

Through the real ``SearchIndex.search`` with the shipped models, the way ``toolcrib eval search
--history`` runs it:

* ``intents_dev`` split by tool (a hash of the right tool's name): the requests of one half are
  replayed as the organization's history, and the other half's requests (their tools unlearned,
  often siblings of learned ones in the same app) and the impossible intents are searched with and
  without it, both ways round. With history, hit@1 and impossible-left-empty are at least as high
  as without, give or take one request.
* MetaTool: with every dev request replayed as history on MetaTool's catalog, the requests that
  need no tool are left empty within .03 of the same run without history.

These compare a run with history to the same run without, so no refit can pass them by moving
a threshold: only a ranker and gate that read usage as added evidence do. The data stands in
shared/ beside the repository: without it this test fails, it does not skip.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from typing import Any

import pytest
from tests.search.conftest import DATA

from toolcrib.eval.data import catalog_docs, ran_of, read_jsonl
from toolcrib.eval.metrics import Ranking, metrics
from toolcrib.eval.replay import rank_queries, replay_history
from toolcrib.search.documents import SearchDoc
from toolcrib.search.index import SearchIndex
from toolcrib.search.semantic import Encoder, load_encoder

pytestmark = pytest.mark.timeout(900)  # encodes ~2,900 texts and searches ~2,300 queries


@pytest.fixture(scope="module")
def encoder() -> Encoder:
    assert (DATA / "catalog.jsonl").exists(), f"the evaluation data is missing: {DATA}"
    loaded, reason = load_encoder()
    assert loaded is not None, reason
    return loaded


def _index(encoder: Encoder, accounts: Mapping[str, Sequence[SearchDoc]]) -> SearchIndex:
    index = SearchIndex(encoder=encoder)
    for account, docs in accounts.items():
        index.replace_account(account, docs)
    return index


def _half(row: Mapping[str, Any]) -> int:
    tool = ran_of(row)
    assert tool is not None
    return int(hashlib.sha256(tool.encode()).hexdigest(), 16) % 2


def _count(rankings: list[Ranking]) -> tuple[int, int]:
    """Positives whose right tool is first, and negatives left empty."""
    hits = sum(1 for r in rankings if r.gold and r.ranked[:1] and r.ranked[0] in r.gold)
    empty = sum(1 for r in rankings if not r.gold and not r.ranked)
    return hits, empty


def test_r5_12_history_of_other_tools_costs_no_intent_its_answer_or_its_empty(encoder: Encoder) -> None:
    accounts = catalog_docs(read_jsonl(DATA / "catalog.jsonl"))
    rows = read_jsonl(DATA / "intents_dev.jsonl")
    positives = [r for r in rows if r.get("gold")]
    negatives = [r for r in rows if not r.get("gold")]
    index = _index(encoder, accounts)
    cold_hits = cold_empty = warm_hits = warm_empty = 0
    for half in (0, 1):
        taught = [r for r in positives if _half(r) == half]
        asked = [r for r in positives if _half(r) != half] + negatives
        index.forget()
        hits, empty = _count(rank_queries(index, accounts, asked))
        cold_hits, cold_empty = cold_hits + hits, cold_empty + empty
        assert replay_history(index, taught) == len(taught)
        hits, empty = _count(rank_queries(index, accounts, asked))
        warm_hits, warm_empty = warm_hits + hits, warm_empty + empty
    index.forget()
    figures = f"hit@1 {cold_hits} -> {warm_hits} of {len(positives)}, empty {cold_empty} -> {warm_empty}"
    assert warm_hits >= cold_hits - 1, figures
    assert warm_empty >= cold_empty - 1, figures


def test_r5_12_metatool_requests_that_need_no_tool_stay_empty_with_every_tool_learned(
    encoder: Encoder,
) -> None:
    accounts = catalog_docs(read_jsonl(DATA / "metatool" / "catalog.jsonl"))
    index = _index(encoder, accounts)
    no_tool = read_jsonl(DATA / "negatives" / "metatool_no_tool.jsonl")
    cold = metrics(rank_queries(index, accounts, no_tool))["negatives_empty"]
    history = read_jsonl(DATA / "metatool" / "queries_dev.jsonl")
    assert replay_history(index, history) == len(history)
    warm = metrics(rank_queries(index, accounts, no_tool))["negatives_empty"]
    assert cold is not None
    assert warm is not None
    assert warm >= cold - 0.03, (cold, warm)
