"""How much of MetaTool a gate could answer with history, at #31's bound on the no-tool requests (held out).

.venv/bin/python bench/gate_ceiling.py [--folds 5] [--per-tool 8] [--empty 0.80]

A diagnostic, not a model that ships. #31 asks, with MetaTool's dev requests as history (8 past
searches per tool), for MetaTool hit@1 >= 0.70, hit@3 >= 0.84 and answered >= 0.90 on the requests
whose right tool was learned (case a), while MetaTool's no-tool requests on the same catalog, with
every tool's history, stay empty >= 0.80 (case c). Every answer goes through the gate, so what the
gate's evidence can tell apart bounds all three figures.

Per fold, the shipped design is fitted on the other folds (``eval.fitting.fit``) and each held-out
request of (a) and (c) is read with the other folds' history: the gate's columns
(``GATE_FEATURES``, the usage channel's among them), whether the shipped gate answers, and whether
the ranker's first (first three) candidates hold its right tool. Then, on those held-out rows:

- ``shipped gate``: as it decides;
- ``shipped gate, threshold at the bound``: its probability, with the threshold that leaves
  exactly ``--empty`` of the no-tool requests empty;
- ``linear gate on MetaTool alone`` and ``quadratic gate on MetaTool alone``: a logistic model on the
  same columns (and, for the second, on their pairwise products too) fitted, per fold, on the other
  folds' rows of these two sets only, the set the targets are measured on, with the threshold at
  the bound.

The thresholds at the bound are chosen on the held-out scores themselves, and the last two gates
are fitted on the very distribution they are measured on: each row is an upper bound of what such
a gate could do, not a figure a shipped model would reach. Requests settled before the gate (an app
nobody carries, R-5.11) are never answered and count in the denominators. Prints a table; writes
bench/out/gate_ceiling.json (rendered into docs/experiments.md by bench/report.py).
"""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from rich.console import Console
from rich.table import Table

from _catalog import DATA, OUT
from fit_gate import CachedEncoder
from toolcrib.eval.engines import load
from toolcrib.eval.examples import Query, collect
from toolcrib.eval.fitting import KEEP, fit, fit_listwise, fit_logistic
from toolcrib.eval.history import channel_of, history
from toolcrib.search.gate import candidates, gate_features, pair_features, with_usage
from toolcrib.search.semantic import load_encoder

SETS = ("metatool", "metatool_no_tool@metatool")


@dataclass(frozen=True)
class Row:
    """One held-out request of (a) or (c) as the gate saw it (``gate`` None: settled before it)."""

    fold: int
    positive: bool
    gate: np.ndarray | None
    probability: float  # the shipped gate's
    threshold: float  # the shipped gate's
    first: bool  # the ranker's first candidate is right
    three: bool  # one of its first three is
    features: np.ndarray | None = None  # the candidates' ``PAIR_FEATURES``
    gold: np.ndarray | None = None  # which candidates are right
    summed: np.ndarray | None = None  # per candidate: cosine + nearest past search + centroid


def rows(queries: list[Query], folds: int, per_tool: int) -> list[Row]:
    """Each held-out request of ``SETS``, read by the models fitted on the other folds with the other
    folds' history (``per_tool`` past searches per tool)."""
    out: list[Row] = []
    for k in range(folds):
        training = [q for q in queries if q.fold != k]
        model = fit(training, True, KEEP)
        channel = channel_of(history(training, per_tool, salt="eval").get("metatool", {}))
        for q in queries:
            if q.fold != k or q.set not in SETS:
                continue
            evidence = q.evidence
            if evidence is not None:
                evidence = with_usage(
                    evidence, channel, q.vector, q.slot_of(), q.names.__getitem__, texts=q.texts
                )
            decision = None if evidence is None else model.decide(evidence)
            if evidence is None or decision is None:  # settled before the gate, or no candidate at all
                out.append(Row(k, q.positive, None, 0.0, model.threshold, False, False))
                continue
            slots = candidates(evidence)  # decide's candidates, in its order before ranking
            features = pair_features(evidence, slots, model.design)
            scored = model.scorer.logit(features)
            gate = gate_features(evidence, slots, scored, model.design)
            right = q.gold[decision.slots]
            usage, cosine = evidence.usage, evidence.cosine
            assert usage is not None
            assert cosine is not None
            learned = usage.mass[slots] > 0
            summed = cosine[slots] + np.where(learned, usage.best[slots] + usage.centroid[slots], 0.0)
            out.append(
                Row(
                    k,
                    q.positive,
                    gate,
                    decision.probability,
                    model.threshold,
                    bool(right[0]),
                    bool(right[:3].any()),
                    features,
                    q.gold[slots],
                    summed,
                )
            )
    return out


def _standard(train: np.ndarray, test: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    mean, spread = train.mean(axis=0), train.std(axis=0)
    spread[spread < 1e-9] = 1.0
    return (train - mean) / spread, (test - mean) / spread


def _pairs(x: np.ndarray) -> np.ndarray:
    return np.hstack([x] + [x[:, i : i + 1] * x[:, i:] for i in range(x.shape[1])])


def held_out(found: list[Row], quadratic: bool) -> np.ndarray:
    """Per row reaching the gate, the score of a logistic gate fitted on the other folds' rows."""
    reached = [r for r in found if r.gate is not None]
    x = np.array([r.gate for r in reached])
    y = np.array([float(r.positive) for r in reached])
    fold = np.array([r.fold for r in reached])
    score = np.zeros(len(reached))
    for k in sorted(set(fold.tolist())):
        train, test = _standard(x[fold != k], x[fold == k])
        if quadratic:
            train, test = _pairs(train), _pairs(test)
        labels = y[fold != k]
        weight = np.where(labels > 0, 1.0 / labels.sum(), 1.0 / (1.0 - labels).sum())
        model = fit_logistic(train, labels, weight, ridge=10.0 if quadratic else 1.0)
        score[fold == k] = model.logit(test)
    return score


def ranked_alone(found: list[Row]) -> list[Row]:
    """``found`` with ``first`` and ``three`` of a ranker (a conditional logit on the same
    columns, ``fit_listwise``) fitted, per fold, on the other folds' MetaTool requests alone."""
    out = list(found)
    lists = [
        (i, r) for i, r in enumerate(found) if r.positive and r.features is not None and r.gold is not None
    ]
    for k in sorted({r.fold for r in found}):
        ranker = fit_listwise(
            [(r.features, r.gold.astype(float), 1.0) for _, r in lists if r.fold != k and r.gold.any()]
        )
        for i, r in lists:
            if r.fold == k:
                right = r.gold[np.argsort(-ranker.logit(r.features), kind="stable")]
                out[i] = replace(r, first=bool(right[0]), three=bool(right[:3].any()))
    return out


def summed_alone(found: list[Row]) -> list[Row]:
    """``found`` with ``first`` and ``three`` of the meaning channel's hand-set sum (the tool's own
    cosine, its nearest past search's and its past searches' centroid's: the best ranking of
    ``bench/usage_ceiling.py``), over the same candidates."""
    out = list(found)
    for i, r in enumerate(found):
        if r.positive and r.summed is not None and r.gold is not None:
            right = r.gold[np.argsort(-r.summed, kind="stable")]
            out[i] = replace(r, first=bool(right[0]), three=bool(right[:3].any()))
    return out


def figures(found: list[Row], answered: np.ndarray) -> dict[str, float]:
    """``answered``: per row reaching the gate, whether it answers."""
    reached = [r for r in found if r.gate is not None]
    positives = sum(r.positive for r in found)
    negatives = len(found) - positives
    yes = [r for r, a in zip(reached, answered.tolist(), strict=True) if a]
    return {
        "first": sum(r.positive and r.first for r in found) / positives,
        "first_three": sum(r.positive and r.three for r in found) / positives,
        "hit@1": sum(r.positive and r.first for r in yes) / positives,
        "hit@3": sum(r.positive and r.three for r in yes) / positives,
        "answered": sum(r.positive for r in yes) / positives,
        "no_tool_empty": 1.0 - sum(not r.positive for r in yes) / negatives,
    }


def at_bound(found: list[Row], score: np.ndarray, empty: float) -> np.ndarray:
    """Answer where ``score`` is above the point that leaves ``empty`` of all no-tool requests empty
    (those settled before the gate are empty already)."""
    reached = [r for r in found if r.gate is not None]
    negative = np.array([not r.positive for r in reached])
    allowed = int(np.floor((1.0 - empty) * sum(not r.positive for r in found) + 1e-9))
    ordered = np.sort(score[negative])[::-1]
    point = ordered[allowed] if allowed < len(ordered) else -np.inf
    answered: np.ndarray = score > point
    return answered


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--per-tool", type=int, default=8)
    parser.add_argument("--empty", type=float, default=0.80)
    args = parser.parse_args()
    encoder, why = load_encoder()
    if encoder is None:
        raise SystemExit(f"the meaning channel is needed: {why}")
    engines, data, vectors = load(DATA, CachedEncoder(encoder))
    found = rows(collect(engines, data, vectors, args.folds), args.folds, args.per_tool)
    reached = [r for r in found if r.gate is not None]
    shipped = np.array([r.probability >= r.threshold for r in reached])
    odds = np.array([np.log(max(r.probability, 1e-12) / max(1.0 - r.probability, 1e-12)) for r in reached])
    results = {
        "shipped gate": figures(found, shipped),
        "shipped gate, threshold at the bound": figures(found, at_bound(found, odds, args.empty)),
        "linear gate on MetaTool alone": figures(found, at_bound(found, held_out(found, False), args.empty)),
        "quadratic gate on MetaTool alone": figures(
            found, at_bound(found, held_out(found, True), args.empty)
        ),
    }
    alone = ranked_alone(found)
    results["quadratic gate and ranker on MetaTool alone"] = figures(
        alone, at_bound(alone, held_out(alone, True), args.empty)
    )
    everything = np.ones(len(reached), dtype=bool)
    results["every request answered, ranker on MetaTool alone"] = figures(alone, everything)
    results["every request answered, cosine + nearest + centroid"] = figures(summed_alone(found), everything)
    positives = [r for r in found if r.positive]
    report: dict[str, Any] = {
        "per_tool": args.per_tool,
        "folds": args.folds,
        "empty_bound": args.empty,
        "positives": len(positives),
        "negatives": len(found) - len(positives),
        "reach_gate": sum(r.gate is not None for r in positives) / len(positives),
        "first": sum(r.first for r in positives) / len(positives),
        "first_three": sum(r.three for r in positives) / len(positives),
        "gates": results,
    }
    bound = f"bound: no-tool empty {args.empty}"
    table = Table(title=f"MetaTool with {args.per_tool} past searches per tool, held out ({bound})")
    for column in ("gate", "first", "first three", "hit@1", "hit@3", "answered", "no-tool empty"):
        table.add_column(column)
    for name, f in results.items():
        keys = ("first", "first_three", "hit@1", "hit@3", "answered", "no_tool_empty")
        table.add_row(name, *(f"{f[k]:.3f}" for k in keys))
    Console().print(table)
    print(
        f"reach the gate {report['reach_gate']:.3f}; the shipped ranker's first candidate right "
        f"{report['first']:.3f}, one of its first three {report['first_three']:.3f} (answered or not)"
    )
    OUT.mkdir(exist_ok=True)
    (OUT / "gate_ceiling.json").write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
