"""The usage channel: past searches that led to a successful call of a tool (SPEC R-5.12).

The gateway hands each tool's examples to the index (``SearchIndex.learn``): a past search's unit
vector, who searched, and when. This module keeps them per tool and, for one query, gives the
evidence the ranker and the gate read (``UsageChannel.evidence``). It is pure: the clock is the
``now`` the caller passes.

**Evidence per tool.** Each member's examples of a tool count with a weight: the sum of their
ages' decay (``HALF_LIFE_DAYS``), capped at ``MEMBER_WEIGHT``. The tool's *mass* is the capped
weights' sum over ``FULL_WEIGHT``, at most 1: one member alone reaches at most ``MEMBER_SHARE`` of
it, however many searches they make, so nobody can steer everyone's search. Against a query:

* ``best``: the best cosine to one of the tool's past searches (a past search is another text of
  the tool; the ranker weighs it by the mass, ``gate._views``);
* ``mean``: the cosine to the weighted mean of its past searches, times the mass (it only chooses
  which tools' past searches are read at all);
* ``centroid``: the cosine to where the tool's past searches point together (their weighted mean as
  a unit vector): with a few past searches of one tool, a better guide to its next request than
  the nearest one alone (#31);
* ``fit``: how near the tool's past searches are, on average, to the tool's own text (the weighted
  mean's cosine to it). A request that is a paraphrase of a past search fits the tool's text
  about as well as its past searches did; a request for a sibling, or for no tool, that happens
  to lie near one of them fits it worse (#31, ``gate._views``).

A tool without examples has zeros: neutral evidence, which the fitted models read as "nothing
learned". ``mean`` is one matrix product over the tools that have examples (as cheap as the
meaning channel); ``best`` and ``centroid`` are computed only for the candidates (``pool``), so a
catalog with 64 examples for each of 10,000 tools does not multiply the query by 640,000 vectors.

The examples are kept as float32: as float16 they took half the memory, but converting the
candidates' examples back for every query cost more than the whole search without history at
10,000 tools (``bench/search_speed.py`` reports the memory per 100,000 examples).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

__all__ = [
    "FULL_WEIGHT",
    "HALF_LIFE_DAYS",
    "MAX_EXAMPLES",
    "MAX_PER_MEMBER",
    "MEMBER_SHARE",
    "PastSearch",
    "Usage",
    "UsageChannel",
]

MAX_EXAMPLES = 64
"""Examples kept per tool (the newest)."""
MAX_PER_MEMBER = 16
"""Examples kept per member and tool: one member cannot fill a tool's evidence with their own."""
FULL_WEIGHT = 3.0
"""The weight (examples of distinct members, each counted up to ``MEMBER_WEIGHT``) at which a
tool's usage evidence is full."""
MEMBER_WEIGHT = 1.0
"""One member's examples of a tool weigh at most this much, however many they are."""
MEMBER_SHARE = MEMBER_WEIGHT / FULL_WEIGHT
"""The largest share of a tool's evidence one member can make (R-5.12)."""
HALF_LIFE_DAYS = 180.0
"""An example's weight halves with every this many days of age."""

Matrix = npt.NDArray[np.float32]
Vector = npt.NDArray[np.float64]
Slots = npt.NDArray[np.int64]


@dataclass(frozen=True, slots=True)
class PastSearch:
    """A search whose handle then ran the tool successfully."""

    vector: Matrix  # the query's unit vector (float32, DIMENSIONS values)
    member: str  # who searched
    at: float  # when (seconds since the epoch)


@dataclass(frozen=True, slots=True)
class Usage:
    """The usage channel's evidence about one query, per slot of the index (zeros: none)."""

    best: Vector  # best cosine to a past search (computed for the pool's slots only)
    mean: Vector  # cosine to the weighted mean of past searches x mass
    mass: Vector  # how much evidence the tool has, in [0, 1]
    fit: Vector  # mean cosine of the tool's past searches to its own text (pool slots only)
    centroid: Vector  # cosine to the unit weighted mean of its past searches (pool slots only)


@dataclass(frozen=True, slots=True)
class _Tool:
    rows: Matrix  # (examples, dimensions)
    mean: Matrix  # weighted mean of the rows (not normalized: q . mean is the weighted mean cosine)
    mass: float
    length: float  # the mean's length: q . mean / length is the cosine to where they point together


class UsageChannel:
    """Each tool's past searches, by public name."""

    def __init__(self) -> None:
        self._past: dict[str, tuple[PastSearch, ...]] = {}
        self._tools: dict[str, _Tool] = {}
        self._stacked: tuple[list[str], Matrix] | None = None
        self._placed: tuple[int, Slots, Vector, Matrix] | None = None  # layout, slots, masses, means

    def __len__(self) -> int:
        """Examples held, over every tool."""
        return sum(len(p) for p in self._past.values())

    def __bool__(self) -> bool:
        return bool(self._tools)

    def learn(self, public_name: str, past: Sequence[PastSearch], now: float) -> None:
        """Make ``past`` the tool's examples (the newest ``MAX_EXAMPLES``, at most
        ``MAX_PER_MEMBER`` of each member; empty forgets it); ``now`` ages them."""
        kept = _bounded(past)
        self._stacked = self._placed = None
        if not kept:
            self._past.pop(public_name, None)
            self._tools.pop(public_name, None)
            return
        self._past[public_name] = kept
        self._tools[public_name] = _summarize(kept, now)

    def forget(self, public_name: str | None = None) -> None:
        """Drop one tool's examples, or every tool's."""
        self._stacked = self._placed = None
        if public_name is None:
            self._past.clear()
            self._tools.clear()
        else:
            self._past.pop(public_name, None)
            self._tools.pop(public_name, None)

    def examples(self, public_name: str) -> tuple[PastSearch, ...]:
        return self._past.get(public_name, ())

    def nbytes(self) -> int:
        """Memory the examples' vectors take (rows and means)."""
        return sum(t.rows.nbytes + t.mean.nbytes for t in self._tools.values())

    def means(
        self, vector: Matrix, slot_of: Mapping[str, int], size: int, layout: int | None = None
    ) -> tuple[Vector, Vector]:
        """``(mean, mass)`` per slot for ``vector``: one matrix product over the tools with examples.
        Where the tools sit is worked out once per ``layout`` of the index (None: every call)."""
        mean, mass = np.zeros(size), np.zeros(size)
        if not self._tools:
            return mean, mass
        slots, weights, stacked = self._place(slot_of, size, layout)
        if not len(slots):
            return mean, mass
        mean[slots] = np.round((stacked @ vector).astype(np.float64), 6) * weights
        mass[slots] = weights
        return mean, mass

    def _place(
        self, slot_of: Mapping[str, int], size: int, layout: int | None
    ) -> tuple[Slots, Vector, Matrix]:
        if layout is not None and self._placed is not None and self._placed[0] == layout:
            return self._placed[1], self._placed[2], self._placed[3]
        if self._stacked is None:
            names = sorted(self._tools)
            self._stacked = names, np.stack([self._tools[n].mean for n in names])
        names, stacked = self._stacked
        slots = np.fromiter((slot_of.get(n, -1) for n in names), dtype=np.int64, count=len(names))
        present = (slots >= 0) & (slots < size)
        weights = np.array([self._tools[n].mass for n in names])[present]
        placed = slots[present], weights, np.ascontiguousarray(stacked[present])
        if layout is not None:
            self._placed = (layout, *placed)
        return placed

    def evidence(
        self,
        vector: Matrix,
        slot_of: Mapping[str, int],
        name_of: Callable[[int], str],
        size: int,
        pool: Callable[[Vector], Slots],
        layout: int | None = None,
        texts: Matrix | None = None,
    ) -> Usage:
        """The usage evidence of the query whose unit vector is ``vector``.

        ``pool(mean)`` gives the slots to compute ``best`` (and ``fit``) for (the candidates of
        the other channels and the best by ``mean``). ``texts`` holds each slot's own text's unit
        vector; without it ``fit`` stays zero."""
        mean, mass = self.means(vector, slot_of, size, layout)
        best, fit, centroid = np.zeros(size), np.zeros(size), np.zeros(size)
        for slot in pool(mean).tolist():
            if mass[slot] <= 0:
                continue
            tool = self._tools.get(name_of(slot))
            if tool is not None:
                best[slot] = round(float((tool.rows @ vector).max()), 6)
                centroid[slot] = round(float(tool.mean @ vector) / tool.length, 6)
                if texts is not None and slot < len(texts):
                    fit[slot] = round(float(tool.mean @ texts[slot]), 6)
        return Usage(best=best, mean=mean, mass=mass, fit=fit, centroid=centroid)


def _bounded(past: Sequence[PastSearch]) -> tuple[PastSearch, ...]:
    kept: list[PastSearch] = []
    per_member: dict[str, int] = {}
    for example in sorted(past, key=lambda p: -p.at):  # newest first
        if len(kept) >= MAX_EXAMPLES:
            break
        if per_member.get(example.member, 0) >= MAX_PER_MEMBER:
            continue
        per_member[example.member] = per_member.get(example.member, 0) + 1
        kept.append(example)
    return tuple(reversed(kept))


def _summarize(past: tuple[PastSearch, ...], now: float) -> _Tool:
    decay = np.array([math.pow(0.5, max(0.0, now - p.at) / (HALF_LIFE_DAYS * 86_400.0)) for p in past])
    rows = np.stack([np.asarray(p.vector, dtype=np.float32) for p in past])
    member_weight: dict[str, float] = {}
    for p, d in zip(past, decay.tolist(), strict=True):
        member_weight[p.member] = member_weight.get(p.member, 0.0) + d
    capped = {m: min(MEMBER_WEIGHT, w) for m, w in member_weight.items()}
    # each example's share of the mean: its decay, scaled so that its member's total is capped
    share = np.array(
        [d * capped[p.member] / member_weight[p.member] for p, d in zip(past, decay.tolist(), strict=True)]
    )
    mean = ((share[:, None] * rows).sum(axis=0) / max(float(share.sum()), 1e-12)).astype(np.float32)
    mass = min(1.0, sum(capped.values()) / FULL_WEIGHT)
    return _Tool(np.ascontiguousarray(rows), mean, mass, max(float(np.linalg.norm(mean)), 1e-12))
