"""Fitting the ranker and the answer gate on the evaluation queries (SPEC R-5.3, R-5.8).

Used by ``bench/fit_gate.py`` (which writes ``model/gate.json``) and by the cross-validation
(``crossval``). The cold models are fitted on each query as it is; the learned models (with the
meaning channel) on the queries with a simulated history (``history.training_examples``).

Each set weighs the same in every fit (a set's queries share its weight), so the 1,592 MetaTool
requests do not drown the short intents.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace

import numpy as np

from toolcrib.eval.data import SETS
from toolcrib.eval.examples import Example, Query
from toolcrib.eval.history import training_examples
from toolcrib.search.gate import GATE_FEATURES, PAIR_FEATURES, FittedGate, Logistic, gate_features

__all__ = ["KEEP", "fit", "fit_examples", "fit_listwise", "fit_logistic"]

RIDGE = 1.0
"""L2 penalty of the gate's logistic model (on standardized features)."""
LIST_RIDGE = 0.01
"""L2 penalty of the listwise ranker (on standardized features, the lists' weights summing to 1);
held-out ranking changed little between 0.001 and 0.03."""
KEEP = 4.0
"""Once the gate answers, candidates within this ranker score of the best are returned too."""


def fit(queries: list[Query], semantic: bool, keep: float | None = None, *, usage: bool = True) -> FittedGate:
    """The cold models fitted on ``queries`` as they are, and (``usage``, with the meaning channel)
    the learned models fitted on them with simulated use (``training_examples``)."""
    cold_sets = {spec.name for spec in SETS if spec.fit}
    cold = fit_examples([q.example(None) for q in queries if q.set in cold_sets], semantic, keep, usage=False)
    if not (usage and semantic):
        return cold
    learned_sets = {spec.name for spec in SETS if spec.learned}
    learned = fit_examples(
        training_examples([q for q in queries if q.set in learned_sets], semantic), semantic, keep, usage=True
    )
    return replace(cold, learned=learned)


def fit_logistic(x: np.ndarray, y: np.ndarray, w: np.ndarray, ridge: float = RIDGE) -> Logistic:
    """Weighted L2 logistic regression by Newton's method on standardized features."""
    w = w / w.sum()
    mean = (w[:, None] * x).sum(axis=0)
    scale = np.sqrt((w[:, None] * (x - mean) ** 2).sum(axis=0))
    scale[scale < 1e-9] = 1.0
    z = np.hstack([(x - mean) / scale, np.ones((len(x), 1))])
    beta = np.zeros(z.shape[1])
    penalty = np.full(z.shape[1], ridge / len(x))
    penalty[-1] = 0.0
    for _ in range(50):
        p = 1.0 / (1.0 + np.exp(-np.clip(z @ beta, -50, 50)))
        gradient = z.T @ (w * (p - y)) + penalty * beta
        hessian = (z * (w * p * (1 - p))[:, None]).T @ z + np.diag(penalty + 1e-12)
        step = np.linalg.solve(hessian, gradient)
        beta -= step
        if np.abs(step).max() < 1e-8:
            break
    return Logistic(beta[:-1], float(beta[-1]), mean, scale)


def _set_weights(examples: Iterable[Example]) -> dict[str, float]:
    counts: dict[str, int] = {}
    for e in examples:
        counts[e.set] = counts.get(e.set, 0) + 1
    return {name: 1.0 / n for name, n in counts.items()}


def fit_listwise(lists: list[tuple[np.ndarray, np.ndarray, float]], ridge: float = LIST_RIDGE) -> Logistic:
    """A ranker fitted on whole candidate lists (a conditional logit): per query, the softmax of the
    candidates' scores should put its mass on the right tools. Each list is ``(features, gold,
    weight)``; Newton's method, steps capped at 1 on standardized features.

    Fitted this way the ranker learns what puts the right tool *first among its own candidates*,
    which is what search returns; a per-candidate logistic model learns whether each candidate,
    alone, is right, and does worse at that (held out, on the same features, it ranked worse on
    every set when it was compared in #9; ``bench/search_quality.py`` gives today's figures)."""
    total = sum(w for _, _, w in lists)
    x = np.vstack([f for f, _, _ in lists])
    row_weight = np.concatenate([np.full(len(f), w / (total * len(f))) for f, _, w in lists])
    mean = row_weight @ x / row_weight.sum()
    scale = np.sqrt(row_weight @ (x - mean) ** 2 / row_weight.sum())
    scale[scale < 1e-9] = 1.0
    standard = [((f - mean) / scale, gold / gold.sum(), w / total) for f, gold, w in lists]
    width = x.shape[1]
    beta = np.zeros(width)
    for _ in range(100):
        gradient = ridge * beta
        hessian = ridge * np.eye(width)
        for z, target, w in standard:
            s = z @ beta
            p = np.exp(s - s.max())
            p /= p.sum()
            expected = z.T @ p
            gradient += w * (expected - z.T @ target)
            hessian += w * ((z * p[:, None]).T @ z - np.outer(expected, expected))
        step = np.linalg.solve(hessian, gradient)
        step *= min(1.0, 1.0 / max(float(np.abs(step).max()), 1e-12))
        beta -= step
        if np.abs(step).max() < 1e-8:
            break
    return Logistic(beta, 0.0, mean, scale)


def fit_examples(
    examples: list[Example], semantic: bool, keep: float | None = None, *, usage: bool = True
) -> FittedGate:
    """Ranker on the positive queries' candidate lists, then the gate on every query's best
    candidate, then the gate's threshold over every query (those settled before the gate stay
    empty whatever it is)."""
    usage = usage and semantic
    everything, examples = examples, [e for e in examples if e.evidence is not None]
    positives = [e for e in examples if e.positive and e.gold.any()]
    share = _set_weights(positives)
    lists = [(_columns(e.features, semantic, usage), e.gold.astype(float), share[e.set]) for e in positives]
    ranker = _expand(fit_listwise(lists), semantic, usage)
    scorer = _expand(_fit_scorer(lists), semantic, usage)
    gx = np.array([_gate_row(e, scorer) for e in examples])
    gy = np.array([float(e.positive) for e in examples])
    share = _set_weights(examples)
    positive_weight = sum(share[e.set] for e in examples if e.positive)
    negative_weight = sum(share[e.set] for e in examples if not e.positive)
    gw = np.array([share[e.set] / (positive_weight if e.positive else negative_weight) for e in examples])
    gate = _expand(fit_logistic(_gate_columns(gx, semantic, usage), gy, gw), semantic, usage, gate=True)
    logit = iter(gate.logit(gx).tolist())
    probability = np.array(
        [1.0 / (1.0 + np.exp(-next(logit))) if e.evidence is not None else 0.0 for e in everything]
    )
    threshold = _threshold(everything, probability)
    return FittedGate(
        ranker, scorer, gate, threshold=threshold, keep=KEEP if keep is None else keep, semantic=semantic
    )


def _threshold(examples: list[Example], probability: np.ndarray) -> float:
    """The gate probability that maximizes the balanced accuracy on the fitting data: the mean, over
    the sets' positive and negative parts, of the share answered (queries with a right tool) or
    left empty (queries without). ``intents_dev`` holds both parts, each counted on its own. A
    settled query (``probability`` 0) is never answered."""
    parts = sorted({(e.set, e.positive) for e in examples})
    masks = [np.array([(e.set, e.positive) == part for e in examples]) for part in parts]
    best, chosen = -1.0, 0.5
    for threshold in np.round(np.arange(0.05, 0.951, 0.01), 2):  # the values the gate compares with
        answered = probability >= threshold
        rates = []
        for (_, positive), mask in zip(parts, masks, strict=True):
            rate = float(answered[mask].mean())
            rates.append(rate if positive else 1.0 - rate)
        if np.mean(rates) > best + 1e-9:
            best, chosen = float(np.mean(rates)), float(round(threshold, 2))
    return chosen


def _dropped(names: tuple[str, ...], semantic: bool, usage: bool) -> list[int]:
    """Columns a model does without: the meaning channel's and the usage channel's without an
    encoder, the usage channel's when fitted without it."""
    prefixes = (() if semantic else ("cosine",)) + (() if semantic and usage else ("usage",))
    return [i for i, f in enumerate(names) if f.startswith(prefixes)] if prefixes else []


def _columns(x: np.ndarray, semantic: bool, usage: bool = True) -> np.ndarray:
    return np.delete(x, _dropped(PAIR_FEATURES, semantic, usage), axis=1)


def _gate_columns(x: np.ndarray, semantic: bool, usage: bool = True) -> np.ndarray:
    return np.delete(x, _dropped(GATE_FEATURES, semantic, usage), axis=1)


def _expand(model: Logistic, semantic: bool, usage: bool = True, *, gate: bool = False) -> Logistic:
    """A model back to the full feature width (zero weight on the columns it did without)."""
    names = GATE_FEATURES if gate else PAIR_FEATURES
    dropped = _dropped(names, semantic, usage)
    if not dropped:
        return model
    width = len(names)
    kept = [i for i in range(width) if i not in dropped]
    weights, mean, scale = np.zeros(width), np.zeros(width), np.ones(width)
    weights[kept], mean[kept], scale[kept] = model.weights, model.mean, model.scale
    return Logistic(weights, model.bias, mean, scale)


def _fit_scorer(lists: list[tuple[np.ndarray, np.ndarray, float]]) -> Logistic:
    """Per candidate: is it right? A list's right and its wrong candidates each weigh half of it."""
    xs, ys, ws = [], [], []
    for features, gold, weight in lists:
        right = gold > 0
        xs.append(features)
        ys.append(right.astype(float))
        halves = (0.5 / max(int(right.sum()), 1), 0.5 / max(int((~right).sum()), 1))
        ws.append(np.where(right, *halves) * weight)
    return fit_logistic(np.vstack(xs), np.concatenate(ys), np.concatenate(ws))


def _gate_row(e: Example, scorer: Logistic) -> np.ndarray:
    assert e.evidence is not None
    scored = scorer.logit(e.features)
    order = np.argsort(-scored, kind="stable")
    return gate_features(e.evidence, order.astype(np.int64), scored[order])
