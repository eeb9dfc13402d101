"""Fitting the ranker and the answer gate on the public evaluation sets (SPEC R-5.3, R-5.8).

Used by ``bench/fit_gate.py`` (which writes ``model/gate.json``) and by the quality test, which
re-runs the cross-validation. Data: every public evaluation set in shared/data/retrieval, each on
its own catalog: intents_dev (short intents and unconnected-app queries, 623-tool catalog),
MetaTool requests (199-tool catalog), MetaTool no-tool requests, LiveMCPBench tasks and their
leave-servers-out twins (623-tool catalog).

Cross-validation: queries are split into folds by a hash of their id (MetaTool requests grouped by
their gold tool, so a tool's requests never sit on both sides). For each fold the models are
fitted on the other folds, installed in a real ``SearchIndex`` (``use_gate``) and the fold's
queries run through ``SearchIndex.search``, the code path the gateway runs. Only these held-out
figures are reported; the shipped models are fitted on all the data.

Each set weighs the same in every fit (a set's queries share its weight), so the 1,592 MetaTool
requests do not drown the short intents.

**Use, simulated inside each fold (R-5.12).** The usage channel reads past searches that led to a
tool. Its evidence is fitted without fooling ourselves: a training query's features are computed
with a history drawn from the *other* training folds (each positive query replayed as a past search
whose first gold tool then ran, as a member of its own), at a level of 0, 1, 2, 4 or 8 past searches
per tool chosen by the query's hash, so the models learn both the cold and the learned case. The
held-out figures are measured with the history of the training folds only, at each level (a
learning curve): a held-out request is never its own history. Folds are therefore drawn per
request (a tool's other requests are the history of its held-out ones); the features name no tool,
so nothing tool-specific can be learned across folds.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from toolcrib.search.evaluate import Ranking, catalog_docs, metrics, public_id
from toolcrib.search.gate import (
    GATE_FEATURES,
    PAIR_FEATURES,
    Evidence,
    FittedGate,
    Logistic,
    candidates,
    gate_features,
    pair_features,
    with_usage,
)
from toolcrib.search.index import SearchDoc, SearchIndex, SearchResult
from toolcrib.search.known_apps import mentioned_apps
from toolcrib.search.semantic import Encoder, doc_text
from toolcrib.search.usage import PastSearch, Usage, UsageChannel

__all__ = [
    "KEEP",
    "LEVELS",
    "SETS",
    "EvalSet",
    "Example",
    "Query",
    "collect",
    "cross_validate",
    "fit",
    "fit_examples",
    "fit_listwise",
    "fit_logistic",
    "learning_curve",
    "load",
    "read_jsonl",
]

QueryVectors = dict[tuple[str, str], Any]
"""(catalog, query) -> the unit vector of the query's encoding text on that catalog's index."""
RIDGE = 1.0
"""L2 penalty of the gate's logistic model (on standardized features)."""
LIST_RIDGE = 0.01
"""L2 penalty of the listwise ranker (on standardized features, the lists' weights summing to 1);
held-out ranking changed little between 0.001 and 0.03."""
KEEP = 4.0
"""Once the gate answers, candidates within this ranker score of the best are returned too."""
LEVELS = (0, 1, 2, 4, 8)
"""Past searches per tool the learning curve is measured at (and the training history is drawn at)."""


@dataclass(frozen=True)
class EvalSet:
    name: str
    path: str
    catalog: str  # "main" or "metatool"
    kind: str  # "short", "long", "none"
    fit: bool = True  # False: reported only (the same requests as another set, on another catalog)
    learned: bool = True  # fitted on by the learned models


SETS = (
    EvalSet("intents_dev", "intents_dev.jsonl", "main", "short"),
    EvalSet("metatool", "metatool/queries_dev.jsonl", "metatool", "long"),
    EvalSet("metatool_no_tool", "negatives/metatool_no_tool.jsonl", "main", "none"),
    # Reported only, by both the cold and the learned models: the same requests are fitted on, on
    # the other catalog. Fitting the learned models on them too was measured (bench/fit_gate.py,
    # 5-fold, 8 past searches per tool): MetaTool answered .76 instead of .91, hit@1 .59 instead of
    # .66, for these left empty .86 instead of .49. Their share of the cost is in the report.
    EvalSet(
        "metatool_no_tool@metatool",
        "negatives/metatool_no_tool.jsonl",
        "metatool",
        "none",
        fit=False,
        learned=False,
    ),
    EvalSet("livemcpbench", "livemcpbench/queries.jsonl", "main", "long"),
    EvalSet("leave_servers_out", "negatives/livemcpbench_leave_servers_out.jsonl", "main", "none"),
)


@dataclass
class Engine:
    """One catalog in a real index, with its tools' vectors kept to restore removed accounts."""

    accounts: dict[str, list[SearchDoc]]
    index: SearchIndex
    vectors: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def build(cls, accounts: dict[str, list[SearchDoc]], encoder: Any) -> Engine:
        index = SearchIndex(encoder=encoder)
        engine = cls(accounts, index)
        for account, docs in accounts.items():
            vectors = index.encode([doc_text(d) for d in docs]) if encoder is not None else None
            engine.vectors[account] = vectors
            index.replace_account(account, docs, vectors)
        return engine

    def excluding(self, row: dict[str, Any], run: Callable[[], Any]) -> Any:
        excluded = [a for a in row.get("exclude_servers") or () if a in self.accounts]
        for account in excluded:
            self.index.remove_account(account)
        try:
            return run()
        finally:
            for account in excluded:
                self.index.replace_account(account, self.accounts[account], self.vectors[account])


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

    def slot_of(self) -> dict[str, int]:
        return {name: i for i, name in enumerate(self.names)}

    def example(self, channel: UsageChannel | None) -> Example:
        """Candidates and features of this query with ``channel``'s history."""
        if self.evidence is None:
            return Example(self.set, self.qid, self.fold, self.positive, _NO_FEATURES, _NO_GOLD, None)
        evidence = self.evidence
        if channel is not None:
            names = self.names
            evidence = with_usage(evidence, channel, self.vector, self.slot_of(), names.__getitem__)
        slots = candidates(evidence)
        if not len(slots):  # no tool holds any of its evidence: settled before the gate
            return Example(self.set, self.qid, self.fold, self.positive, _NO_FEATURES, _NO_GOLD, None)
        return Example(
            self.set,
            self.qid,
            self.fold,
            self.positive,
            pair_features(evidence, slots),
            self.gold[slots],
            _restricted(evidence, slots),
        )


_NO_FEATURES = np.zeros((0, len(PAIR_FEATURES)))
_NO_GOLD = np.zeros(0, dtype=bool)


def _fold(row: dict[str, Any], folds: int) -> int:
    return int(hashlib.sha256(row["qid"].removesuffix("-neg").encode()).hexdigest(), 16) % folds


def _hash(text: str) -> int:
    return int(hashlib.sha256(text.encode()).hexdigest(), 16)


def _gold(row: dict[str, Any]) -> set[str]:
    names = {public_id(g) for g in row.get("gold") or ()}
    for group in row.get("gold_groups") or ():
        names |= {public_id(g) for g in group}
    return names


def _ran(row: dict[str, Any]) -> str | None:
    """The tool a replay of ``row`` as a past search ran: its first gold tool."""
    gold = row.get("gold") or [g for group in row.get("gold_groups") or () for g in group]
    return public_id(gold[0]) if gold else None


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
        usage=None
        if usage is None
        else Usage(usage.best[slots], usage.near[slots], usage.mean[slots], usage.mass[slots]),
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
                name for row in rows[spec.name] if (name := _ran(row)) is not None
            )
    out: list[Query] = []
    for spec in SETS:
        if not (spec.fit or spec.learned):
            continue
        engine = engines[spec.catalog]
        for row in rows[spec.name]:
            gold = _gold(row)
            vector = vectors.get((spec.catalog, row["query"]))
            settled = Query(
                spec.name,
                spec.catalog,
                row["qid"],
                _fold(row, folds),
                bool(gold),
                None,
                [],
                _NO_GOLD,
                vector,
                _ran(row),
            )
            if engine.index._not_connected(mentioned_apps(row["query"]), None, None):
                out.append(settled)
                continue

            def gather(
                row: dict[str, Any] = row,
                engine: Engine = engine,
                vector: Any = vector,
                learnable: set[str] = ran[spec.catalog],
            ) -> tuple[Evidence, np.ndarray, list[str]] | None:
                evidence = engine.index.evidence(row["query"], vector)
                if evidence is None:
                    return None
                slot_of = engine.index._slot_of
                known = np.array([slot_of[n] for n in learnable if n in slot_of], dtype=np.int64)
                slots = np.union1d(candidates(evidence), known).astype(np.int64)
                slots = slots[evidence.live[slots]]
                return evidence, slots, [engine.index._name_of(int(s)) for s in slots]

            found = engine.excluding(row, gather)
            if found is None or not len(found[1]):
                out.append(settled)
                continue
            evidence, slots, names = found
            out.append(
                Query(
                    spec.name,
                    spec.catalog,
                    row["qid"],
                    _fold(row, folds),
                    bool(gold),
                    _restricted(evidence, slots),
                    names,
                    np.array([n in gold for n in names]),
                    vector,
                    _ran(row),
                )
            )
    return out


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


def training_examples(queries: list[Query], semantic: bool) -> list[Example]:
    """The training queries' examples with use: each with a history from the training queries of
    the other folds, at a level (1, 2, 4 or 8 per tool) chosen by a hash of its id; only those
    where some candidate has past searches (the others are the cold models' to decide)."""
    out: list[Example] = []
    if not semantic:
        return out
    levels = LEVELS[1:]
    for fold in sorted({q.fold for q in queries}):
        own = [q for q in queries if q.fold == fold]
        others = [q for q in queries if q.fold != fold]
        channels: dict[tuple[str, int], UsageChannel] = {}
        for level in levels:
            for catalog, past in history(others, level, salt=f"{fold}").items():
                channels[catalog, level] = channel_of(past)
        for q in own:
            example = q.example(channels.get((q.catalog, levels[_hash("level:" + q.qid) % len(levels)])))
            if example.evidence is None or example.evidence.usage is None:
                continue
            if bool((example.evidence.usage.mass > 0).any()):
                out.append(example)
    return out


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
    alone, is right, and does worse at that (5-fold held-out, same features: intents hit@1 0.906
    -> 0.943, MetaTool 0.568 -> 0.582, LiveMCPBench top-5 recall 0.361 -> 0.371, ranking only)."""
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


def run_set(
    spec: EvalSet, engine: Engine, rows: list[dict[str, Any]], vectors: QueryVectors
) -> list[Ranking]:
    out = []
    for row in rows:

        def search(row: dict[str, Any] = row) -> SearchResult:
            vector = vectors.get((spec.catalog, row["query"]))
            return engine.index.search(row["query"], limit=10, query_vector=vector)

        result: SearchResult = engine.excluding(row, search)
        gold = frozenset(public_id(g) for g in row.get("gold") or ())
        groups = tuple(frozenset(public_id(g) for g in grp) for grp in row.get("gold_groups") or ())
        out.append(Ranking(str(row["qid"]), [h.public_name for h in result.hits], gold, groups))
    return out


def cross_validate(
    queries: list[Query],
    engines: dict[str, Engine],
    rows: dict[str, list[dict[str, Any]]],
    vectors: QueryVectors,
    folds: int,
    semantic: bool,
    keep: float,
    *,
    usage: bool = True,
) -> dict[str, dict[str, Any]]:
    """Held-out figures per set without history: each fold's queries ranked by models fitted on
    the other folds."""
    return learning_curve(queries, engines, rows, vectors, folds, semantic, keep, (0,), usage=usage)[0]


def learning_curve(
    queries: list[Query],
    engines: dict[str, Engine],
    rows: dict[str, list[dict[str, Any]]],
    vectors: QueryVectors,
    folds: int,
    semantic: bool,
    keep: float,
    levels: tuple[int, ...] = LEVELS,
    *,
    usage: bool = True,
) -> dict[int, dict[str, dict[str, Any]]]:
    """Held-out figures per history level and set: each fold's queries ranked by models fitted on
    the other folds, through the real ``SearchIndex.search``, the index having learned up to
    ``level`` past searches per tool from the other folds' queries (never the fold's own)."""
    rankings: dict[int, dict[str, list[Ranking]]] = {lv: {spec.name: [] for spec in SETS} for lv in levels}
    for k in range(folds):
        model = fit([q for q in queries if q.fold != k], semantic, keep, usage=usage)
        for engine in engines.values():
            engine.index.use_gate(model)
        training = [q for q in queries if q.fold != k]
        for level in levels:
            learned = history(training, level if semantic and usage else 0, salt="eval")
            for catalog, engine in engines.items():
                engine.index.forget()
                for name, past in learned.get(catalog, {}).items():
                    engine.index.learn(name, past, now=0.0)
            for spec in SETS:
                held = [r for r in rows[spec.name] if _fold(r, folds) == k]
                rankings[level][spec.name] += run_set(spec, engines[spec.catalog], held, vectors)
    for engine in engines.values():
        engine.index.forget()
    return {lv: {name: metrics(r) for name, r in sets.items()} for lv, sets in rankings.items()}


def load(
    data: Path, encoder: Encoder | None
) -> tuple[dict[str, Engine], dict[str, list[dict[str, Any]]], QueryVectors]:
    """Both catalogs in real indexes, every set's rows, and (with an encoder) every query's vector."""
    catalogs = {
        "main": catalog_docs(read_jsonl(data / "catalog.jsonl")),
        "metatool": catalog_docs(read_jsonl(data / "metatool" / "catalog.jsonl")),
    }
    engines = {name: Engine.build(accounts, encoder) for name, accounts in catalogs.items()}
    rows = {spec.name: read_jsonl(data / spec.path) for spec in SETS}
    vectors: QueryVectors = {}
    if encoder is not None:
        texts = {
            (spec.catalog, r["query"]): engines[spec.catalog].index.encoding_text(r["query"])
            for spec in SETS
            for r in rows[spec.name]
        }
        unique = sorted(set(texts.values()))
        encoded = dict(zip(unique, encoder.encode(unique), strict=True))
        vectors = {key: encoded[text] for key, text in texts.items()}
    return engines, rows, vectors


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    with path.open(encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]
