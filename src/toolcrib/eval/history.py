"""Past use, simulated from the evaluation queries themselves (R-5.12).

The usage channel reads past searches that led to a tool. Its evidence is fitted without fooling
ourselves: a training query's features are computed with a history drawn from the *other*
training folds (each positive query replayed as a past search whose first gold tool then ran, as a
member of its own), at a level of 0, 1, 2, 4 or 8 past searches per tool chosen by the query's
hash, so the models learn both the cold and the learned case. The held-out figures are measured
with the history of the training folds only, at each level (a learning curve, ``crossval``): a
held-out request is never its own history. Folds are therefore drawn per request (a tool's other
requests are the history of its held-out ones); the features name no tool, so nothing
tool-specific can be learned across folds.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator
from contextlib import contextmanager

import numpy as np

from toolcrib.eval.examples import Example, Query
from toolcrib.search.usage import PastSearch, UsageChannel

__all__ = [
    "CASES",
    "LEVELS",
    "channel_of",
    "forgotten",
    "history",
    "sibling_case",
    "training_examples",
    "without",
]

LEVELS = (0, 1, 2, 4, 8)
"""Past searches per tool the learning curve is measured at (and the training history is drawn at)."""


def _hash(text: str) -> int:
    return int(hashlib.sha256(text.encode()).hexdigest(), 16)


def history(
    queries: Iterable[Query], level: int, *, salt: str = ""
) -> dict[str, dict[str, list[PastSearch]]]:
    """Per catalog and tool, up to ``level`` of ``queries`` replayed as past searches: each positive
    query as a search whose first gold tool then ran, by a member of its own, chosen in an order
    fixed by a hash of its id."""
    out: dict[str, dict[str, list[PastSearch]]] = {}
    if level <= 0:
        return out
    for q in sorted(queries, key=lambda q: _hash(salt + q.qid)):
        if q.ran is None or q.vector is None:
            continue
        past = out.setdefault(q.catalog, {}).setdefault(q.ran, [])
        if len(past) < level:
            past.append(PastSearch(np.asarray(q.vector, dtype=np.float32), q.qid, 0.0))
    return out


def channel_of(past: dict[str, list[PastSearch]]) -> UsageChannel:
    channel = UsageChannel()
    for name, searches in past.items():
        channel.learn(name, searches, now=0.0)
    return channel


CASES = ("cold", "right", "siblings", "none")
"""The histories a query is fitted and reported with (#31): ``cold`` none at all; ``right`` its
right tool has past searches (case a); ``siblings`` its right tool has none while about half of
the other tools keep theirs (case b: a new need in an organization that uses some of the rest,
``sibling_case``); ``none`` a query that needs no connected tool, with every tool's history
present (case c)."""

SIBLINGS_KEPT = 2
"""In case b, one in this many of the other tools keeps its history (by a hash of the query and the
tool). Were every other tool to keep it, the one tool without history would always be the right
one, and a model could learn that instead of what the usage evidence says (#31)."""


def sibling_case(qid: str, gold: Iterable[str], learned: Iterable[str]) -> list[str]:
    """The tools whose history case b forgets for query ``qid``: its right tools, and the learned
    tools a hash of the query and the tool's name does not keep (``SIBLINGS_KEPT``)."""
    right = set(gold)
    kept = {name for name in learned if name not in right and _hash(f"{qid}|{name}") % SIBLINGS_KEPT == 0}
    return sorted(set(learned) - kept | right)


def without(past: dict[str, list[PastSearch]], tools: Iterable[str]) -> dict[str, list[PastSearch]]:
    """``past`` without the past searches of ``tools``."""
    dropped = set(tools)
    return {name: searches for name, searches in past.items() if name not in dropped}


def training_examples(queries: list[Query], semantic: bool, design: str = "views") -> list[Example]:
    """The training queries' examples with use, each with a history from the training queries of
    the other folds at a level (1, 2, 4 or 8 per tool) chosen by a hash of its id: a positive twice
    (its right tools with their history, case a; without it while about half of the others keep
    theirs, case b, ``sibling_case``), a negative once (every tool's history, case c)."""
    out: list[Example] = []
    if not semantic:
        return out
    levels = LEVELS[1:]
    for fold in sorted({q.fold for q in queries}):
        own = [q for q in queries if q.fold == fold]
        others = [q for q in queries if q.fold != fold]
        channels: dict[tuple[str, int], UsageChannel] = {}
        taught: dict[tuple[str, int], list[str]] = {}
        for level in levels:
            for catalog, past in history(others, level, salt=f"{fold}").items():
                channels[catalog, level] = channel_of(past)
                taught[catalog, level] = sorted(past)
        for q in own:
            key = (q.catalog, levels[_hash("level:" + q.qid) % len(levels)])
            channel = channels.get(key, UsageChannel())
            if not q.positive:
                out.append(q.example(channel, design, "none"))
                continue
            out.append(q.example(channel, design, "right"))
            gold = [name for name, right in zip(q.names, q.gold.tolist(), strict=True) if right]
            with forgotten(channel, sibling_case(q.qid, gold, taught.get(key, []))):
                out.append(q.example(channel, design, "siblings"))
    return out


@contextmanager
def forgotten(channel: UsageChannel, tools: Iterable[str]) -> Iterator[None]:
    """``channel`` without ``tools``' past searches for a while (they are learned back after)."""
    kept = {name: channel.examples(name) for name in tools}
    for name in kept:
        channel.forget(name)
    try:
        yield
    finally:
        for name, past in kept.items():
            if past:
                channel.learn(name, past, now=0.0)
