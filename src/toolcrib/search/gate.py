"""Ranking by fitted fusion, and the calibrated answer-or-empty gate (SPEC R-5.2, R-5.3, R-5.8, R-5.12).

The engine gathers its evidence for one query (``Evidence``): per tool, the lexical score of
R-5.2 and the share of the query's weight it matches, how much of the tool's name the query
covers, the meaning channel's cosine, and the usage channel's past searches (R-5.12). Small
logistic models, fitted by ``bench/fit_gate.py`` on the public evaluation sets and shipped as
``model/gate.json``, decide:

* the **ranker** scores each candidate tool from its evidence (a fusion whose weights are
  fitted, not guessed, on whole candidate lists); tools are ordered by that score;
* the **scorer** reads the same evidence, fitted on each candidate alone: how likely is this
  one to be right;
* the **gate** reads the query-level evidence (the best scorer score and its margin to the
  runner-up, the best cosine and lexical share, the query's length, the usage evidence) and says
  whether anything fits at all. When it does, every candidate within ``keep`` of the best ranker
  score is returned too (the other steps of a multi-step task).

One set of models decides every query, learned or not (#31): the usage channel adds columns
that are zero unless a tool's past search is nearer the query than its own text (``_views``), so
a request far from every past search is decided exactly as without history. There is one set
with the meaning channel and one for words alone (used when the encoder cannot load). No word
list takes part: what a tool is, and whether a query is about one, come from the catalog and
the query.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from toolcrib.search.usage import Usage, UsageChannel

__all__ = [
    "DESIGNS",
    "GATE_FEATURES",
    "PAIR_FEATURES",
    "USAGE_FEATURES",
    "Decision",
    "Evidence",
    "FittedGate",
    "Logistic",
    "candidates",
    "gate_features",
    "pair_features",
    "with_usage",
]

Vector = npt.NDArray[np.float64]
Matrix = npt.NDArray[np.float64]
Slots = npt.NDArray[np.int64]

DEPTH = 30
"""Candidates per channel: the best this many by lexical score and by cosine."""
MIN_SPREAD = 0.05
"""Floor of the cosine spread a z-score divides by (a catalog of a few tools has almost none;
over a real catalog it is 0.06-0.10)."""

USAGE_FEATURES = (
    "usage_lift",
    "usage_over",
    "usage_apart",
    "usage_view_low",
    "usage_view_mid",
    "usage_view_high",
    "usage_short",
    "usage_fitted_low",
    "usage_fitted_mid",
    "usage_fitted_high",
    "usage_typical",
    "usage_centroid",
    "usage_centroid_typical",
)
"""The usage channel's columns of a candidate (``_views``, in this order; ``_low``, ``_mid`` and
``_high`` above each of ``KNOTS``)."""
PAIR_FEATURES = (
    "cosine",
    "cosine_z",
    "cosine_gap",
    "cosine_rank",
    "share",
    "score_rel",
    "lexical_rank",
    "name_share",
    "name_words",
    "label",
    "cosine_x_share",
    *USAGE_FEATURES,
)
GATE_FEATURES = (
    "top",
    "margin",
    "cosine_max",
    "cosine_margin",
    "cosine_z",
    "share_max",
    "name_share_max",
    "terms",
    "unmatched",
    "usage_lift_top",  # the first usage column of the best-scored candidate
    *(f"{name}_max" for name in USAGE_FEATURES[1:]),  # each other one's largest over the candidates
)
KNOTS = (0.45, 0.6, 0.75)
"""Where the usage columns' piecewise-linear reading of a past search's cosine bends (a basis, not
a decision: the fitted weights say how much each stretch counts). A past search nearer than the
first knot counts only by how far it stands above the tool's own text."""
TYPICAL_AMONG = 20
"""This many of the query's best candidates by their own text's cosine say what lift a candidate
typically shows for the query (``usage_typical``; a tool without history lifts nothing)."""
TYPICAL_PERCENTILE = 90
"""Which percentile of those lifts is the typical one (50, 75 and 90 were measured, #31)."""
DESIGNS = ("views", "relative", "both")
"""How the usage channel's evidence reaches the one ranker and gate (R-5.12, #31):

* ``views``: a tool's past searches are extra texts of it in the meaning channel: its cosine is
  its own text's, raised toward the best of its past searches by its mass (never lowered);
* ``relative``: the cosine stays the tool's own; the usage columns say how far the nearest past
  search stands above the tool's own text and above the best text of any candidate;
* ``both``: the two together.

Every usage column is zero when no past search is nearer the query than the tool's own text, so
a request far from every past search is decided exactly as without history."""
_PACKAGED = Path(__file__).parent / "model" / "gate.json"


@dataclass(frozen=True, slots=True)
class Evidence:
    """What the engine knows about one query, per slot of the index."""

    score: Vector  # lexical score
    share: Vector  # share of the query's weight the tool matches
    name_share: Vector  # share of the tool's name weight the query holds
    name_words: Vector  # how many of the tool's name words the query holds
    label: Vector  # 1 where a query word is a word of the tool's account or connector label
    cosine: Vector | None  # meaning channel; None when it is down
    cosine_mean: float  # mean and spread of the cosine over every tool: how far the best stands out
    cosine_std: float
    live: npt.NDArray[np.bool_]  # slots that hold a tool
    terms: int  # query terms that carry weight
    unmatched: float  # share of the query's weight no tool matches at all
    usage: Usage | None = None  # the usage channel; None: nothing learned, or no vector


def candidates(evidence: Evidence, depth: int = DEPTH, usage_mean: Vector | None = None) -> Slots:
    """The best ``depth`` tools by lexical score, by cosine, and by closeness to the tools' past
    searches (those with any evidence): a tool whose past searches are near the query is a
    candidate even when its text is not (R-5.12). ``usage_mean`` given: the pool the usage channel
    computes its views for; else a tool joins by its past searches only where one of them is
    nearer the query than its own text (a request far from every past search has the candidates
    it would have without history)."""
    pools: list[Slots] = []
    lexical = np.flatnonzero(evidence.score > 0)
    if len(lexical):
        pools.append(_top(evidence.score, lexical, depth))
    if evidence.cosine is not None:
        live = np.flatnonzero(evidence.live)
        if len(live):
            pools.append(_top(evidence.cosine, live, depth))
    if usage_mean is not None:
        learned = np.flatnonzero((usage_mean > 0) & evidence.live)
        if len(learned):
            pools.append(_top(usage_mean, learned, depth))
    elif evidence.usage is not None and evidence.cosine is not None:
        usage = evidence.usage
        lifted = np.flatnonzero((usage.mass > 0) & (usage.best > evidence.cosine) & evidence.live)
        if len(lifted):
            pools.append(_top(usage.mass * (usage.best - evidence.cosine), lifted, depth))
    if not pools:
        return np.zeros(0, dtype=np.int64)
    return np.unique(np.concatenate(pools)).astype(np.int64)


def _top(values: Vector, slots: Slots, depth: int) -> Slots:
    """The ``depth`` of ``slots`` with the highest ``values``, ties to the earlier slot: the set a
    stable sort would take first, in linear time (a catalog of 10,000 tools is sorted per query
    otherwise, three times)."""
    if len(slots) <= depth:
        return slots
    picked = values[slots]
    kth = np.partition(picked, len(picked) - depth)[len(picked) - depth]
    above = slots[picked > kth]
    tied = slots[picked == kth][: depth - len(above)]
    out: Slots = np.concatenate([above, tied])
    return out


def with_usage(
    evidence: Evidence,
    channel: UsageChannel,
    vector: npt.NDArray[Any] | None,
    slot_of: Mapping[str, int],
    name_of: Callable[[int], str],
    layout: int | None = None,
    texts: npt.NDArray[Any] | None = None,
) -> Evidence:
    """``evidence`` with the usage channel's evidence of the query whose unit vector is ``vector``
    (unchanged when nothing is learned or there is no vector). ``layout`` names the index's slot
    layout, so that the channel places its tools once per layout (None: every time); ``texts``
    holds the unit vector of each slot's own text (how near a tool's past searches are to it)."""
    if vector is None or not channel:
        return evidence
    usage = channel.evidence(
        np.asarray(vector, dtype=np.float32),
        slot_of,
        name_of,
        len(evidence.score),
        lambda mean: candidates(evidence, usage_mean=mean),
        layout,
        texts,
    )
    return replace(evidence, usage=usage)


def _inverse_rank(values: Vector) -> Vector:
    """1 / (1 + how many candidates score strictly higher): equal values get equal ranks, so two
    identical tools get identical features (R-5.6 then orders them by name)."""
    ascending = np.sort(values)
    higher = len(values) - np.searchsorted(ascending, values, side="right")
    inverse: Vector = 1.0 / (1.0 + higher.astype(np.float64))
    return inverse


def _views(evidence: Evidence, slots: Slots, design: str) -> tuple[Vector, Matrix]:
    """The candidates' cosine as the models read it, and the usage columns (``USAGE_FEATURES``).

    The columns: how far the nearest past search stands above the tool's own text, above the best
    own text of any candidate, above every other candidate's nearest past search, and above each
    of ``KNOTS``; how much worse the query fits the tool's own text than the tool's past searches
    do on average (``Usage.fit``), and the nearest past search docked by that, above each knot;
    the lift against what the best candidates typically show (``_over_typical``); and the lift of
    where the past searches point together (``Usage.centroid``), plain and against the typical.
    Each times the tool's mass, so all zero where nothing is learned; all but the knots of the
    nearest past search zero where no past search is nearer than the text. ``views`` adds the
    first to the cosine instead, and leaves the columns zero."""
    n = len(slots)
    none = np.zeros((n, len(USAGE_FEATURES)))
    if evidence.cosine is None:
        return np.zeros(n), none
    own = evidence.cosine[slots]
    usage = evidence.usage
    if usage is None:
        return own, none
    mass, best = usage.mass[slots], usage.best[slots]
    lift = mass * np.maximum(best - own, 0.0)
    if design == "views":
        return own + lift, none
    viewed = np.where(mass > 0, best, 0.0)
    apart = np.zeros(n)
    if n > 1:  # how far it stands above every other candidate's nearest past search
        top = np.sort(viewed)[::-1]
        apart = mass * np.maximum(viewed - np.where(viewed >= top[0], top[1], top[0]), 0.0)
    # how much worse the query fits the tool's own text than its past searches did (never above
    # zero): a paraphrase of a past search fits it as they do; a sibling's request or a no-tool one
    # that lies near a past search fits it worse. The knots again, on the nearest past search
    # docked by it.
    short = (lift > 0) * np.minimum(own - usage.fit[slots], 0.0)
    among = np.argsort(-own, kind="stable")[:TYPICAL_AMONG]
    # where its past searches point together, read only where one of them is nearer the query
    # than the text, as every usage column
    centre = np.where(lift > 0, usage.centroid[slots], own)
    columns = [
        lift,
        mass * np.maximum(best - (float(own.max()) if n else 0.0), 0.0),
        apart,
        *(mass * np.maximum(best - knot, 0.0) for knot in KNOTS),
        mass * short,
        *((lift > 0) * mass * np.maximum(best + short - knot, 0.0) for knot in KNOTS),
        _over_typical(own, best, mass, among),
        mass * np.maximum(centre - own, 0.0),
        _over_typical(own, centre, mass, among),
    ]
    return (own + lift if design == "both" else own), np.stack(columns, axis=1) if n else none


def _over_typical(own: Vector, best: Vector, mass: Vector, among: Slots) -> Vector:
    """How far each learned candidate's nearest past search stands above its own text, less what a
    candidate typically shows for this query (the ``TYPICAL_PERCENTILE`` of that lift over the
    ``TYPICAL_AMONG`` best candidates by their own text, a tool without history lifting nothing, as
    do the missing ones of a catalog with fewer candidates), times its mass. ``among``: those
    best candidates' places in ``own``.

    When a request's best candidates are mostly learned and their past searches all stand above
    their texts (many siblings learned, the request near none of their past searches in
    particular), a learned sibling gains nothing on the right tool that has no history yet, and
    one whose past searches are no nearer than its text falls behind it; when few of them are
    learned the typical lift is none and the column is the plain lift. Zero for every candidate
    when no past search is nearer the query than its tool's own text."""
    lift = np.where(mass > 0, np.maximum(best - own, 0.0), 0.0)
    if not lift.any():
        return np.zeros(len(own))
    lifts = np.zeros(TYPICAL_AMONG)  # fewer candidates: the rest lift nothing
    lifts[: len(among)] = lift[among]
    lifts.sort()
    at = TYPICAL_PERCENTILE / 100.0 * (TYPICAL_AMONG - 1)  # np.percentile's linear reading, inline
    below = int(at)
    typical = float(lifts[below] + (at - below) * (lifts[min(below + 1, TYPICAL_AMONG - 1)] - lifts[below]))
    out: Vector = np.where(mass > 0, mass * (lift - typical), 0.0)
    return out


def pair_features(
    evidence: Evidence, slots: Slots, design: str = "views", viewed: tuple[Vector, Matrix] | None = None
) -> Matrix:
    """One row of ``PAIR_FEATURES`` per candidate slot (``design``: how usage is read, ``DESIGNS``;
    ``viewed``: ``_views`` of the same slots, when already read)."""
    n = len(slots)
    score = evidence.score[slots]
    best = float(score.max()) if n else 0.0
    share = evidence.share[slots]
    cosine, usage = viewed if viewed is not None else _views(evidence, slots, design)
    if evidence.cosine is not None:
        gap = cosine - (float(cosine.max()) if n else 0.0)
        cosine_rank = _inverse_rank(cosine)
        z = (cosine - evidence.cosine_mean) / max(evidence.cosine_std, MIN_SPREAD)
    else:
        gap = cosine_rank = z = np.zeros(n)
    lexical_rank = np.where(score > 0, _inverse_rank(score), 0.0)
    columns = (
        cosine,
        z,
        gap,
        cosine_rank,
        share,
        score / best if best > 0 else np.zeros(n),
        lexical_rank,
        evidence.name_share[slots],
        np.minimum(evidence.name_words[slots], 3.0) / 3.0,
        evidence.label[slots],
        cosine * share,
    )
    if not n:
        return np.zeros((0, len(PAIR_FEATURES)))
    return np.hstack([np.stack(columns, axis=1), usage])


def gate_features(
    evidence: Evidence,
    slots: Slots,
    scored: Vector,
    design: str = "views",
    viewed: tuple[Vector, Matrix] | None = None,
) -> Vector:
    """``GATE_FEATURES`` of one query: ``scored`` is the scorer's score of each of ``slots``
    (``viewed`` as for ``pair_features``)."""
    order = np.argsort(-scored, kind="stable")
    top = float(scored[order[0]])
    margin = top - float(scored[order[1]]) if len(order) > 1 else 4.0
    views, usage = viewed if viewed is not None else _views(evidence, slots, design)
    if evidence.cosine is not None:
        cosine = np.sort(views)[::-1]
        cosine_max = float(cosine[0])
        cosine_margin = cosine_max - float(cosine[1]) if len(cosine) > 1 else 0.0
        cosine_z = (cosine_max - evidence.cosine_mean) / max(evidence.cosine_std, MIN_SPREAD)
    else:
        cosine_max = cosine_margin = cosine_z = 0.0
    return np.array(
        [
            top,
            min(margin, 4.0),
            cosine_max,
            cosine_margin,
            cosine_z,
            float(evidence.share[slots].max()),
            float(evidence.name_share[slots].max()),
            math.log1p(evidence.terms),
            evidence.unmatched,
            float(usage[order[0], 0]),
            *usage[:, 1:].max(axis=0).tolist(),  # over the best text, the others, the knots, the fit
        ]
    )


@dataclass(frozen=True, slots=True)
class Logistic:
    """A logistic model over standardized features."""

    weights: Vector
    bias: float
    mean: Vector
    scale: Vector

    def logit(self, x: Matrix | Vector) -> Vector:
        z: Vector = ((x - self.mean) / self.scale) @ self.weights + self.bias
        return z

    def to_json(self) -> dict[str, Any]:
        return {
            "weights": self.weights.tolist(),
            "bias": self.bias,
            "mean": self.mean.tolist(),
            "scale": self.scale.tolist(),
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Logistic:
        return cls(
            np.asarray(data["weights"], dtype=float),
            float(data["bias"]),
            np.asarray(data["mean"], dtype=float),
            np.asarray(data["scale"], dtype=float),
        )


@dataclass(frozen=True, slots=True)
class Decision:
    """The ranked candidates of one query and which of them are returned."""

    slots: Slots  # candidates, best first
    ranked: Vector  # the ranker's score of each, same order
    answer: bool  # the gate's verdict: does anything fit?
    keep: npt.NDArray[np.bool_]  # which candidates are returned (all False when not answering)
    probability: float  # the gate's probability that the query is about a connected tool


@dataclass(frozen=True, slots=True)
class FittedGate:
    """The fitted models, the gate's threshold, and ``keep`` (the ranker score distance to the best
    that still passes).

    The **ranker** orders a query's candidates: fitted on whole candidate lists, its scores say
    which candidate is likelier than which, not how likely any is. The **scorer**, fitted on each
    candidate alone, says how likely each is to be right, and the gate reads its scores (the best,
    and the margin to the runner-up).

    One set of models decides every query, learned or not (#31): the usage channel's evidence is
    read beside the cold evidence as ``design`` says (``DESIGNS``), and it is fitted on queries
    without history, with the right tool's history, with only its siblings' history, and on
    no-tool queries with every tool's history (``eval.history``)."""

    ranker: Logistic
    scorer: Logistic
    gate: Logistic
    threshold: float  # the gate answers when its probability is at least this
    keep: float
    semantic: bool
    design: str = "views"

    def decide(self, evidence: Evidence) -> Decision | None:
        slots = candidates(evidence)
        if not len(slots):
            return None
        viewed = _views(evidence, slots, self.design)
        features = pair_features(evidence, slots, self.design, viewed)
        scored = self.scorer.logit(features)
        gate = gate_features(evidence, slots, scored, self.design, viewed)
        probability = _sigmoid(float(self.gate.logit(gate)))
        ranked = self.ranker.logit(features)
        order = np.argsort(-ranked, kind="stable")
        slots, ranked = slots[order], ranked[order]
        answer = probability >= self.threshold
        keep = (ranked >= ranked[0] - self.keep) & answer
        return Decision(slots, ranked, answer, keep, probability)

    def to_json(self) -> dict[str, Any]:
        return {
            "ranker": self.ranker.to_json(),
            "scorer": self.scorer.to_json(),
            "gate": self.gate.to_json(),
            "threshold": self.threshold,
            "keep": self.keep,
            "semantic": self.semantic,
            "design": self.design,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> FittedGate:
        design = str(data.get("design", "views"))
        if design not in DESIGNS:
            raise ValueError(f"unknown usage design {design!r}")
        return cls(
            Logistic.from_json(data["ranker"]),
            Logistic.from_json(data["scorer"]),
            Logistic.from_json(data["gate"]),
            float(data["threshold"]),
            float(data["keep"]),
            bool(data["semantic"]),
            design,
        )

    @classmethod
    def packaged(cls, *, semantic: bool) -> FittedGate:
        """The shipped models (``model/gate.json``, written by ``bench/fit_gate.py``)."""
        return _packaged(semantic)


def _sigmoid(z: float) -> float:
    return 1.0 / (1.0 + math.exp(-max(-50.0, min(50.0, z))))


@cache
def _packaged(semantic: bool) -> FittedGate:
    data = json.loads(_PACKAGED.read_text(encoding="utf-8"))
    return FittedGate.from_json(data["semantic" if semantic else "lexical"])
