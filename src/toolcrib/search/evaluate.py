"""Search quality on an evaluation set (pure: rows in, rankings and figures out).

A query row has ``qid``, ``query`` and ``gold`` (public names, any of which is right); a
LiveMCPBench row adds ``gold_groups`` (one list per needed tool, ids in ``server/tool`` form),
a leave-servers-out row ``exclude_servers`` (accounts removed from the catalog for that query).
A row with no gold is a negative: nothing should come back.

Figures: hit@1, hit@3 and MRR@10 over positives; the share of positives with any result; the
share of negatives with none; R@5 over ``gold_groups`` (per query, the share of groups with a
member in the top 5, averaged).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from toolcrib.search.index import SearchDoc, SearchIndex
from toolcrib.search.semantic import Matrix, doc_text
from toolcrib.search.usage import PastSearch

__all__ = [
    "Ranking",
    "catalog_docs",
    "group_recall",
    "hit_at",
    "metrics",
    "public_id",
    "rank_queries",
    "reciprocal_rank",
    "replay_history",
]

RANKED_DEPTH = 10


@dataclass(frozen=True, slots=True)
class Ranking:
    qid: str
    ranked: list[str]
    gold: frozenset[str]
    groups: tuple[frozenset[str], ...]


def public_id(gold_id: str) -> str:
    """LiveMCPBench ``server/tool`` -> catalog ``server__tool`` (public names pass unchanged)."""
    return gold_id.replace("/", "__", 1) if "__" not in gold_id else gold_id


def catalog_docs(rows: Iterable[Mapping[str, Any]]) -> dict[str, list[SearchDoc]]:
    """Catalog snapshot rows grouped into SearchDocs per account."""
    accounts: dict[str, list[SearchDoc]] = defaultdict(list)
    for row in rows:
        doc = SearchDoc(
            row["id"], row["account"], row["connector"], row["name"], row.get("description") or ""
        )
        accounts[doc.account].append(doc)
    return dict(accounts)


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


def hit_at(ranked: Sequence[str], gold: frozenset[str], k: int) -> bool:
    return any(name in gold for name in ranked[:k])


def reciprocal_rank(ranked: Sequence[str], gold: frozenset[str], k: int = RANKED_DEPTH) -> float:
    for position, name in enumerate(ranked[:k], start=1):
        if name in gold:
            return 1.0 / position
    return 0.0


def group_recall(ranked: Sequence[str], groups: Sequence[frozenset[str]], k: int = 5) -> float:
    if not groups:
        return 0.0
    top = set(ranked[:k])
    return sum(1 for group in groups if group & top) / len(groups)


def _mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


def metrics(rankings: Sequence[Ranking]) -> dict[str, float | int | None]:
    """The figures of one evaluation set (None where the set has no such queries)."""
    positives = [r for r in rankings if r.gold]
    negatives = [r for r in rankings if not r.gold]
    grouped = [r for r in rankings if r.groups]
    return {
        "queries": len(rankings),
        "positives": len(positives),
        "negatives": len(negatives),
        "hit@1": _mean([float(hit_at(r.ranked, r.gold, 1)) for r in positives]),
        "hit@3": _mean([float(hit_at(r.ranked, r.gold, 3)) for r in positives]),
        "mrr@10": _mean([reciprocal_rank(r.ranked, r.gold) for r in positives]),
        "positives_non_empty": _mean([float(bool(r.ranked)) for r in positives]),
        "negatives_empty": _mean([float(not r.ranked) for r in negatives]),
        "r@5": _mean([group_recall(r.ranked, r.groups) for r in grouped]),
    }
