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

__all__ = ["DESIGN", "KEEP", "fit", "fit_examples", "fit_listwise", "fit_logistic"]

RIDGE = 1.0
"""L2 penalty of the gate's logistic model (on standardized features)."""
LIST_RIDGE = 0.01
"""L2 penalty of the listwise ranker (on standardized features, the lists' weights summing to 1);
held-out ranking changed little between 0.001 and 0.03."""
DESIGN = "relative"
"""How the shipped models read the usage channel (``gate.DESIGNS``; the others' figures are in
docs/experiments.md)."""
KEEP = 4.0
"""Once the gate answers, candidates within this ranker score of the best are returned too."""


def fit(
    queries: list[Query],
    semantic: bool,
    keep: float | None = None,
    *,
    usage: bool = True,
    design: str = DESIGN,
) -> FittedGate:
    """One set of models (#31), fitted on ``queries`` as they are and (``usage``, with the meaning
    channel) on them again with simulated use (``training_examples``: the right tool's history,
    only its siblings', and no-tool queries with every tool's)."""
    cold_sets = {spec.name for spec in SETS if spec.fit}
    examples = [q.example(None, design) for q in queries if q.set in cold_sets]
    if usage and semantic:
        learned_sets = {spec.name for spec in SETS if spec.learned}
        examples += training_examples([q for q in queries if q.set in learned_sets], semantic, design)
    return fit_examples(examples, semantic, keep, usage=usage, design=design)


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


EMPTY_WEIGHT = 2.0
"""How much more the queries that need no tool weigh than those that need one when the gate's usage
weights are fitted: a wrong answer is the worse failure (empty is the better one), and what was
learned must not cost a request that was left empty before."""


CASE_WEIGHT = {"cold": 1.0, "right": 1.0, "siblings": 2.0, "none": 1.0}
"""How much each simulated history (``history.CASES``) weighs beside the others in a set. A request
whose right tool has no history while its siblings do (a new need) weighs double: what was
learned must not cost it the answer it had (#31); its measured price is in docs/experiments.md."""


def _set_weights(examples: Iterable[Example]) -> dict[tuple[str, str], float]:
    """Each set weighs the same in each simulated history (its examples share that weight, times
    ``CASE_WEIGHT``)."""
    counts: dict[tuple[str, str], int] = {}
    for e in examples:
        counts[e.set, e.case] = counts.get((e.set, e.case), 0) + 1
    return {key: CASE_WEIGHT[key[1]] / n for key, n in counts.items()}


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
    standard = [((f - mean) / scale, np.zeros(len(f)), gold / gold.sum(), w / total) for f, gold, w in lists]
    return Logistic(_conditional_logit(standard, x.shape[1], ridge), 0.0, mean, scale)


def _conditional_logit(
    standard: list[tuple[np.ndarray, np.ndarray, np.ndarray, float]], width: int, ridge: float
) -> np.ndarray:
    """Newton's method for a conditional logit over lists of ``(features, offset, target, weight)``:
    each list's scores are its offset plus its features times the weights; steps capped at 1."""
    beta = np.zeros(width)
    for _ in range(100):
        gradient = ridge * beta
        hessian = ridge * np.eye(width)
        for z, offset, target, w in standard:
            s = offset + z @ beta
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
    return beta


def fit_examples(
    examples: list[Example],
    semantic: bool,
    keep: float | None = None,
    *,
    usage: bool = True,
    design: str = DESIGN,
) -> FittedGate:
    """The cold evidence's weights and the threshold on the queries without history
    (``_fit_cold``), then (``usage``, with the meaning channel, ``design`` other than ``views``)
    the usage columns' weights on the queries with simulated history, the cold part held as it is
    (``_fit_usage``): one ranker, one scorer and one gate, whose usage columns are zero where no
    past search is nearer the query than a tool's own text, so such a query is decided as
    without history. With ``views`` the usage reaches the cold weights through the cosine."""
    model = _fit_cold([e for e in examples if e.case == "cold"], semantic, keep, design)
    learned = [e for e in examples if e.case != "cold" and e.evidence is not None]
    if not (usage and semantic and design != "views" and learned):
        return model
    return _fit_usage(model, learned)


def _fit_cold(examples: list[Example], semantic: bool, keep: float | None, design: str) -> FittedGate:
    """Ranker on the positive queries' candidate lists, then the gate on every query's best
    candidate, then the gate's threshold over every query (those settled before the gate stay
    empty whatever it is); the usage columns get no weight."""
    everything, examples = examples, [e for e in examples if e.evidence is not None]
    positives = [e for e in examples if e.positive and e.gold.any()]
    share = _set_weights(positives)
    lists = [(_columns(e.features, semantic), e.gold.astype(float), share[e.set, e.case]) for e in positives]
    ranker = _expand(fit_listwise(lists), semantic)
    scorer = _expand(_fit_scorer(lists), semantic)
    gx = np.array([_gate_row(e, scorer, design) for e in examples])
    gy = np.array([float(e.positive) for e in examples])
    gw = _balanced(examples)
    gate = _expand(fit_logistic(_gate_columns(gx, semantic), gy, gw), semantic, gate=True)
    logit = iter(gate.logit(gx).tolist())
    probability = np.array(
        [1.0 / (1.0 + np.exp(-next(logit))) if e.evidence is not None else 0.0 for e in everything]
    )
    threshold = _threshold(everything, probability)
    return FittedGate(
        ranker,
        scorer,
        gate,
        threshold=threshold,
        keep=KEEP if keep is None else keep,
        semantic=semantic,
        design=design,
    )


def _balanced(examples: list[Example]) -> np.ndarray:
    """Per example, its share of its set's (and history's) weight, positives and negatives each
    summing to one."""
    share = _set_weights(examples)
    positive = sum(share[e.set, e.case] for e in examples if e.positive)
    negative = sum(share[e.set, e.case] for e in examples if not e.positive)
    return np.array([share[e.set, e.case] / (positive if e.positive else negative) for e in examples])


def _fit_usage(cold: FittedGate, examples: list[Example]) -> FittedGate:
    """``cold`` with weights on the usage columns of the ranker and the gate, fitted on
    ``examples`` (queries with simulated history) with the cold part of each score held as an
    offset: no bias, no centring, so a query whose usage columns are zero scores exactly as
    ``cold`` scores it. The scorer stays cold: the gate reads its best score and margin as
    evidence from the tools' own texts, and the usage evidence only through its own columns,
    whose weights cannot be negative (``_adding``)."""
    pair = [i for i, f in enumerate(PAIR_FEATURES) if f.startswith("usage")]
    gate_cols = [i for i, f in enumerate(GATE_FEATURES) if f.startswith("usage")]
    positives = [e for e in examples if e.positive and e.gold.any()]
    share = _set_weights(positives)
    lists = [(e.features, e.gold.astype(float), share[e.set, e.case]) for e in positives]
    ranker = _with_columns(cold.ranker, pair, _offset_listwise(cold.ranker, lists, pair))
    gx = np.array([_gate_row(e, cold.scorer, cold.design) for e in examples])
    gy = np.array([float(e.positive) for e in examples])
    offset = cold.gate.logit(gx)
    weight = _balanced(examples) * np.where(gy > 0, 1.0, EMPTY_WEIGHT)
    gate = _with_columns(cold.gate, gate_cols, _adding(gx[:, gate_cols], gy, weight, offset))
    return replace(cold, ranker=ranker, gate=gate)


def _with_columns(model: Logistic, columns: list[int], fitted: tuple[np.ndarray, np.ndarray]) -> Logistic:
    weights, scale = model.weights.copy(), model.scale.copy()
    mean = model.mean.copy()
    weights[columns], scale[columns], mean[columns] = fitted[0], fitted[1], 0.0
    return Logistic(weights, model.bias, mean, scale)


def _scale(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Root weighted mean square per column (not centred: zero stays zero)."""
    scale: np.ndarray = np.sqrt((w[:, None] * x**2).sum(axis=0) / w.sum())
    scale[scale < 1e-9] = 1.0
    return scale


def _adding(x: np.ndarray, y: np.ndarray, w: np.ndarray, offset: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The gate's usage weights, none below zero: what was learned can only add to the evidence
    that a query is about a tool, so a query the cold evidence answers is never refused for it
    (whether nothing fits is the cold evidence's to say). Fitted on the columns whose weight
    comes out positive, again until none is negative."""
    kept = list(range(x.shape[1]))
    weights, scale = np.zeros(x.shape[1]), np.ones(x.shape[1])
    while kept:
        beta, kept_scale = _offset_logistic(x[:, kept], y, w, offset)
        if (beta >= 0).all():
            weights[kept], scale[kept] = beta, kept_scale
            break
        kept = [c for c, b in zip(kept, beta.tolist(), strict=True) if b > 0]
    return weights, scale


def _offset_logistic(
    x: np.ndarray, y: np.ndarray, w: np.ndarray, offset: np.ndarray, ridge: float = RIDGE
) -> tuple[np.ndarray, np.ndarray]:
    """Weights (and scales) of ``x``'s columns in a logistic model whose logit is ``offset`` plus
    them: no intercept, Newton's method."""
    w = w / w.sum()
    scale = _scale(x, w)
    z = x / scale
    beta = np.zeros(z.shape[1])
    penalty = ridge / len(x)
    for _ in range(50):
        p = 1.0 / (1.0 + np.exp(-np.clip(offset + z @ beta, -50, 50)))
        gradient = z.T @ (w * (p - y)) + penalty * beta
        hessian = (z * (w * p * (1 - p))[:, None]).T @ z + np.eye(len(beta)) * (penalty + 1e-12)
        step = np.linalg.solve(hessian, gradient)
        beta -= step
        if np.abs(step).max() < 1e-8:
            break
    return beta, scale


def _offset_listwise(
    cold: Logistic,
    lists: list[tuple[np.ndarray, np.ndarray, float]],
    columns: list[int],
    ridge: float = LIST_RIDGE,
) -> tuple[np.ndarray, np.ndarray]:
    """The ranker's usage weights: a conditional logit over whole lists whose scores are the cold
    ranker's plus these columns' (``fit_listwise`` with an offset)."""
    total = sum(w for _, _, w in lists)
    x = np.vstack([f[:, columns] for f, _, _ in lists])
    row_weight = np.concatenate([np.full(len(f), w / (total * len(f))) for f, _, w in lists])
    scale = _scale(x, row_weight)
    standard = [(f[:, columns] / scale, cold.logit(f), gold / gold.sum(), w / total) for f, gold, w in lists]
    return _conditional_logit(standard, len(columns), ridge), scale


def _threshold(examples: list[Example], probability: np.ndarray) -> float:
    """The gate probability that maximizes the balanced accuracy on the fitting data: the mean, over
    the sets' positive and negative parts, of the share answered (queries with a right tool) or
    left empty (queries without). ``intents_dev`` holds both parts, each counted on its own. A
    settled query (``probability`` 0) is never answered."""
    parts = sorted({(e.set, e.case, e.positive) for e in examples})
    masks = [np.array([(e.set, e.case, e.positive) == part for e in examples]) for part in parts]
    best, chosen = -1.0, 0.5
    for threshold in np.round(np.arange(0.05, 0.951, 0.01), 2):  # the values the gate compares with
        answered = probability >= threshold
        rates = []
        for (_, _, positive), mask in zip(parts, masks, strict=True):
            rate = float(answered[mask].mean())
            rates.append(rate if positive else 1.0 - rate)
        if np.mean(rates) > best + 1e-9:
            best, chosen = float(np.mean(rates)), float(round(threshold, 2))
    return chosen


def _dropped(names: tuple[str, ...], semantic: bool) -> list[int]:
    """Columns the cold fit does without: the usage channel's (fitted after, ``_fit_usage``), and
    the meaning channel's without an encoder."""
    prefixes = ("usage",) if semantic else ("usage", "cosine")
    return [i for i, f in enumerate(names) if f.startswith(prefixes)]


def _columns(x: np.ndarray, semantic: bool) -> np.ndarray:
    return np.delete(x, _dropped(PAIR_FEATURES, semantic), axis=1)


def _gate_columns(x: np.ndarray, semantic: bool) -> np.ndarray:
    return np.delete(x, _dropped(GATE_FEATURES, semantic), axis=1)


def _expand(model: Logistic, semantic: bool, *, gate: bool = False) -> Logistic:
    """A model back to the full feature width (zero weight on the columns it did without)."""
    names = GATE_FEATURES if gate else PAIR_FEATURES
    dropped = _dropped(names, semantic)
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


def _gate_row(e: Example, scorer: Logistic, design: str) -> np.ndarray:
    assert e.evidence is not None
    scored = scorer.logit(e.features)
    order = np.argsort(-scored, kind="stable")
    return gate_features(e.evidence, order.astype(np.int64), scored[order], design)
