"""Each evaluation query as the engine saw it: its evidence, restricted to its possible candidates.

``collect`` searches every query once, before any history, and keeps what the ranker and the gate
read about it (``Query``); ``Query.example`` adds a history (the usage channel's evidence) and
gives the candidates' features (``Example``), which is what the models are fitted on.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from toolcrib.eval.data import SETS, fold_of, gold_of, ran_of
from toolcrib.eval.engines import Engine, QueryVectors
from toolcrib.search.gate import PAIR_FEATURES, Evidence, candidates, pair_features, with_usage
from toolcrib.search.usage import Usage, UsageChannel

__all__ = ["Example", "Query", "collect"]


@dataclass
class Example:
    """One query's candidates: their pair features, which are gold, and the query-level evidence."""

    set: str
    qid: str
    fold: int
    positive: bool
    features: np.ndarray  # (candidates, PAIR_FEATURES)
    gold: np.ndarray  # bool per candidate
    evidence: Evidence | None  # restricted to the candidates (slot i = candidate i); None: settled
    case: str = "cold"  # the history it was fitted with (``history.CASES``)


@dataclass
class Query:
    """One query as the engine saw it, before any history: its evidence restricted to the tools
    that can be candidates (slot i = ``names[i]``), which of those are gold, its vector, and the
    tool a replay of it as a past search would have run (``ran``)."""

    set: str
    catalog: str
    qid: str
    fold: int
    positive: bool
    evidence: Evidence | None  # None: settled before the gate
    names: list[str]
    gold: np.ndarray  # bool per name
    vector: Any  # the query's unit vector (None without the meaning channel)
    ran: str | None  # its first gold tool (None: a negative)
    texts: Any = None  # the unit vector of each name's own text (None without the meaning channel)

    def slot_of(self) -> dict[str, int]:
        return {name: i for i, name in enumerate(self.names)}

    def example(self, channel: UsageChannel | None, design: str = "views", case: str = "cold") -> Example:
        """Candidates and features of this query with ``channel``'s history (``design``: how the
        models read it; ``case``: which simulated history it is)."""
        settled = Example(self.set, self.qid, self.fold, self.positive, _NO_FEATURES, _NO_GOLD, None, case)
        if self.evidence is None:
            return settled
        evidence = self.evidence
        if channel is not None:
            names = self.names
            evidence = with_usage(
                evidence, channel, self.vector, self.slot_of(), names.__getitem__, texts=self.texts
            )
        slots = candidates(evidence)
        if not len(slots):  # no tool holds any of its evidence: settled before the gate
            return settled
        return Example(
            self.set,
            self.qid,
            self.fold,
            self.positive,
            pair_features(evidence, slots, design),
            self.gold[slots],
            _restricted(evidence, slots),
            case,
        )


_NO_FEATURES = np.zeros((0, len(PAIR_FEATURES)))
_NO_GOLD = np.zeros(0, dtype=bool)


def _restricted(evidence: Evidence, slots: np.ndarray) -> Evidence:
    usage = evidence.usage
    return Evidence(
        score=evidence.score[slots],
        share=evidence.share[slots],
        name_share=evidence.name_share[slots],
        name_words=evidence.name_words[slots],
        label=evidence.label[slots],
        cosine=None if evidence.cosine is None else evidence.cosine[slots],
        cosine_mean=evidence.cosine_mean,
        cosine_std=evidence.cosine_std,
        live=np.ones(len(slots), dtype=bool),
        terms=evidence.terms,
        unmatched=evidence.unmatched,
        usage=None if usage is None else _restricted_usage(usage, slots),
    )


def _restricted_usage(usage: Usage, slots: np.ndarray) -> Usage:
    return Usage(
        usage.best[slots],
        usage.mean[slots],
        usage.mass[slots],
        usage.fit[slots],
        usage.centroid[slots],
    )


def collect(
    engines: dict[str, Engine], rows: dict[str, list[dict[str, Any]]], vectors: QueryVectors, folds: int
) -> list[Query]:
    """Every query's evidence, restricted to the tools that can be its candidates with any history:
    its candidates without history, and every live tool some positive query of its catalog ran.
    A query answered empty before the gate (it names a known app nobody carries, R-5.11, or no
    tool holds any of its evidence) is kept without evidence: it fits nothing, but counts in the
    shares the threshold is chosen on."""
    ran: dict[str, set[str]] = {}
    for spec in SETS:
        if spec.fit or spec.learned:
            ran.setdefault(spec.catalog, set()).update(
                name for row in rows[spec.name] if (name := ran_of(row)) is not None
            )
    out: list[Query] = []
    for spec in SETS:
        if not (spec.fit or spec.learned):
            continue
        engine = engines[spec.catalog]
        for row in rows[spec.name]:
            gold = gold_of(row)
            vector = vectors.get((spec.catalog, row["query"]))
            settled = Query(
                spec.name,
                spec.catalog,
                row["qid"],
                fold_of(row, folds),
                bool(gold),
                None,
                [],
                _NO_GOLD,
                vector,
                ran_of(row),
            )
            if engine.index.not_connected(row["query"]):
                out.append(settled)
                continue

            def gather(
                row: dict[str, Any] = row,
                engine: Engine = engine,
                vector: Any = vector,
                learnable: set[str] = ran[spec.catalog],
            ) -> tuple[Evidence, np.ndarray, list[str], Any] | None:
                index = engine.index
                evidence = index.evidence(row["query"], vector)
                if evidence is None:
                    return None
                known = np.array(
                    [slot for n in learnable if (slot := index.slot(n)) is not None], dtype=np.int64
                )
                slots = np.union1d(candidates(evidence), known).astype(np.int64)
                slots = slots[evidence.live[slots]]
                return evidence, slots, [index.name_at(int(s)) for s in slots], index.text_vectors(slots)

            found = engine.excluding(row, gather)
            if found is None or not len(found[1]):
                out.append(settled)
                continue
            evidence, slots, names, texts = found
            out.append(
                Query(
                    spec.name,
                    spec.catalog,
                    row["qid"],
                    fold_of(row, folds),
                    bool(gold),
                    _restricted(evidence, slots),
                    names,
                    np.array([n in gold for n in names]),
                    vector,
                    ran_of(row),
                    texts,
                )
            )
    return out
