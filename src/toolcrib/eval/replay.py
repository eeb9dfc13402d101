"""A queries file through one real index: each query ranked, or replayed as past use.

What ``toolcrib eval search`` runs: the index is the one the gateway runs, built from a catalog
snapshot, and each query goes through ``SearchIndex.search``.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from toolcrib.eval.data import public_id
from toolcrib.eval.metrics import RANKED_DEPTH, Ranking
from toolcrib.search.documents import SearchDoc
from toolcrib.search.index import SearchIndex
from toolcrib.search.semantic import Matrix, doc_text
from toolcrib.search.usage import PastSearch

__all__ = ["rank_queries", "replay_history"]


def rank_queries(
    index: SearchIndex, accounts: Mapping[str, Sequence[SearchDoc]], queries: Iterable[Mapping[str, Any]]
) -> list[Ranking]:
    """Run each query through ``index`` (which holds ``accounts``) at depth 10.

    A row's ``exclude_servers`` are removed for that query and put back after (with their vectors
    kept, so nothing is encoded twice)."""
    out: list[Ranking] = []
    kept: dict[str, Matrix | None] = {}
    for row in queries:
        excluded = [a for a in row.get("exclude_servers") or () if a in accounts]
        for account in excluded:
            if account not in kept:
                docs = accounts[account]
                kept[account] = index.encode([doc_text(d) for d in docs]) if index.semantic else None
            index.remove_account(account)
        try:
            result = index.search(row["query"], limit=RANKED_DEPTH)
        finally:
            for account in excluded:
                index.replace_account(account, accounts[account], kept[account])
        gold = frozenset(public_id(g) for g in row.get("gold") or ())
        groups = tuple(frozenset(public_id(g) for g in grp) for grp in row.get("gold_groups") or ())
        out.append(Ranking(str(row["qid"]), [h.public_name for h in result.hits], gold, groups))
    return out


def replay_history(index: SearchIndex, rows: Iterable[Mapping[str, Any]], now: float = 0.0) -> int:
    """Teach ``index`` a queries file as its organization's past use (R-5.12): each positive row is
    replayed as a past search, by a member of its own, whose first gold tool then ran. Returns how
    many were learned (none without the meaning channel: the usage channel reads query vectors)."""
    if not index.semantic:
        return 0
    replayed = []
    for row in rows:
        gold = list(row.get("gold") or ()) or [g for group in row.get("gold_groups") or () for g in group]
        if gold:
            replayed.append((str(row["qid"]), str(row["query"]), public_id(str(gold[0]))))
    if not replayed:
        return 0
    vectors = index.encode([index.encoding_text(query) for _, query, _ in replayed])
    past: dict[str, list[PastSearch]] = defaultdict(list)
    for (qid, _, tool), vector in zip(replayed, vectors, strict=True):
        past[tool].append(PastSearch(vector, f"history:{qid}", now))
    for tool, searches in past.items():
        index.learn(tool, searches, now)
    return len(replayed)
