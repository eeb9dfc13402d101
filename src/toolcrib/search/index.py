"""The in-process search index the gateway queries (SPEC section 5).

One index per replica holds every connected tool. ``replace_account`` swaps one connection's
tools in place (only the words of those tools are touched); per-call visibility and restriction
are callables checked on ranked candidates, so a caller's view never rebuilds anything.

IDF is computed over the whole index, not over each caller's searchable set: the two differ only
where a caller sees a small part of a large catalog, and the exact form would cost a visibility
check per matched tool per query. The floor compares weights of one query with each other, so a
shared approximation shifts all of them together.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
import numpy.typing as npt

from toolcrib.search.coverage import NameCoverage, name_parts
from toolcrib.search.documents import SearchDoc
from toolcrib.search.floor import QueryTerm, Weighed, weigh, widen
from toolcrib.search.gate import Evidence, FittedGate, with_usage
from toolcrib.search.known_apps import (
    KnownApp,
    carries,
    label_names,
    mentioned_apps,
    possible_apps,
    tool_names,
)
from toolcrib.search.lexical import match_term
from toolcrib.search.options import SearchOptions
from toolcrib.search.postings import Postings
from toolcrib.search.ranking import confidence, fitted_confidence, ordered, select
from toolcrib.search.semantic import MAX_QUERY_CHARACTERS, Encoder, Matrix, MeaningChannel, doc_text
from toolcrib.search.synonyms import synonyms
from toolcrib.search.tokenize import query_words, raw_words, stem, words
from toolcrib.search.usage import PastSearch, UsageChannel
from toolcrib.search.values import value_words

__all__ = ["Hit", "SearchDoc", "SearchIndex", "SearchResult"]

Visibility = Callable[[str], bool]
Fields = tuple[frozenset[str], frozenset[str], frozenset[str]]
Vector = npt.NDArray[np.float64]


@dataclass(frozen=True, slots=True)
class Hit:
    public_name: str
    score: float
    confidence: Literal["high", "medium", "low"]


@dataclass(frozen=True, slots=True)
class SearchResult:
    hits: list[Hit]  # best first, at most `limit`, only tools for which visible(name) is True
    restricted: list[str]  # names of withheld tools that matched, sorted, at most 10
    not_connected: list[str]
    query_vector: Matrix | None = None  # the query's unit vector, when the meaning channel read it


_EMPTY = SearchResult([], [], [])


class SearchIndex:
    """Connected tools, searchable by intent (R-5.2..R-5.11)."""

    def __init__(self, *, encoder: Encoder | None = None, options: SearchOptions | None = None) -> None:
        self._options = options or SearchOptions()
        self._docs: list[SearchDoc | None] = []
        self._fields: list[Fields | None] = []
        self._free: list[int] = []
        self._slot_of: dict[str, int] = {}
        self._tool_names: dict[str, set[int]] = {}  # a name a tool's own name spells -> those slots
        self._exact_names: dict[tuple[str, ...], set[int]] = {}  # a tool's name, as words -> those slots
        self._accounts: dict[str, list[int]] = {}
        self._labels: dict[str, frozenset[str]] = {}
        self._label_accounts: dict[str, set[str]] = {}  # a label name -> the accounts whose labels hold it
        self._postings = Postings()
        self._coverage = NameCoverage()
        self._encoder = encoder
        self._meaning = MeaningChannel() if encoder is not None else None
        self._gate: FittedGate | None = None
        self._usage = UsageChannel()
        self._layout = 0  # changes whenever a slot is filled or freed
        self._live: tuple[int, npt.NDArray[np.bool_]] | None = None

    @property
    def semantic(self) -> bool:
        """Whether the meaning channel (R-5.8) is in use."""
        return self._meaning is not None

    def encode(self, texts: list[str]) -> Matrix:
        """Unit vectors of ``texts`` by this index's encoder (CPU work: keep it off the event loop)."""
        assert self._encoder is not None, "this index has no meaning channel"
        return self._encoder.encode(texts)

    def __len__(self) -> int:
        return len(self._docs) - len(self._free)

    def replace_account(self, account: str, docs: Sequence[SearchDoc], vectors: Matrix | None = None) -> None:
        """Make ``docs`` the account's tools, touching no other account.

        ``vectors`` are the tools' unit vectors (rows of ``encode([doc_text(d) for d in docs])``),
        computed by the caller off the event loop; when omitted they are encoded here.
        """
        self.remove_account(account)
        if not docs:
            return
        slots = [self._add(doc) for doc in docs]
        self._accounts[account] = slots
        self._labels[account] = label_names(*{account, *(doc.connector for doc in docs)})
        for name in self._labels[account]:
            self._label_accounts.setdefault(name, set()).add(account)
        if self._meaning is not None:
            if vectors is None:
                vectors = self.encode([doc_text(doc) for doc in docs])
            self._meaning.add(slots, vectors)

    def learn(self, public_name: str, past: Sequence[PastSearch], now: float) -> None:
        """Make ``past`` the tool's examples for the usage channel (R-5.12); ``now`` ages them."""
        self._usage.learn(public_name, past, now)

    def forget(self, public_name: str | None = None) -> None:
        """Drop one tool's examples (or every tool's) from the usage channel."""
        self._usage.forget(public_name)

    @property
    def examples(self) -> int:
        """Examples the usage channel holds."""
        return len(self._usage)

    def remove_account(self, account: str) -> None:
        for slot in self._accounts.pop(account, []):
            fields = self._fields[slot]
            assert fields is not None
            self._postings.remove(slot, fields)
            self._coverage.discard(slot)
            doc = self._docs[slot]
            assert doc is not None
            self._slot_of.pop(doc.public_name, None)
            for name in tool_names(doc.name):
                named = self._tool_names[name]
                named.discard(slot)
                if not named:
                    del self._tool_names[name]
            spelled = self._exact_names[_name_key(doc.name)]
            spelled.discard(slot)
            if not spelled:
                del self._exact_names[_name_key(doc.name)]
            self._docs[slot] = None
            self._fields[slot] = None
            self._free.append(slot)
            self._layout += 1
            if self._meaning is not None:
                self._meaning.discard(slot)
        for name in self._labels.pop(account, frozenset()):
            holders = self._label_accounts[name]
            holders.discard(account)
            if not holders:
                del self._label_accounts[name]

    def _add(self, doc: SearchDoc) -> int:
        fields = self._doc_fields(doc)
        if self._free:
            slot = self._free.pop()
            self._docs[slot] = doc
            self._fields[slot] = fields
        else:
            slot = len(self._docs)
            self._docs.append(doc)
            self._fields.append(fields)
        self._slot_of[doc.public_name] = slot
        self._layout += 1
        for name in tool_names(doc.name):
            self._tool_names.setdefault(name, set()).add(slot)
        self._exact_names.setdefault(_name_key(doc.name), set()).add(slot)
        self._postings.add(slot, fields)
        self._coverage.add(slot, name_parts(doc.name) if self._options.stemming else frozenset(fields[0]))
        return slot

    def _doc_fields(self, doc: SearchDoc) -> Fields:
        stemming = self._options.stemming
        return (
            frozenset(words(doc.name, stemming=stemming)),
            frozenset(words(f"{doc.account} {doc.connector}", stemming=stemming)),
            frozenset(words(doc.description, stemming=stemming, compounds=stemming)),
        )

    def _name_of(self, slot: int) -> str:
        doc = self._docs[slot]
        assert doc is not None
        return doc.public_name

    def slot(self, public_name: str) -> int | None:
        """The slot of the tool named ``public_name`` (None: not indexed). ``evidence`` holds one
        value per slot; the fitting reads a tool's evidence by it."""
        return self._slot_of.get(public_name)

    def text_vectors(self, slots: npt.NDArray[np.int64]) -> Matrix | None:
        """The unit vectors of the tools' own texts at ``slots`` (None without the meaning channel)."""
        if self._meaning is None:
            return None
        return self._meaning.rows[slots].copy()

    def name_at(self, slot: int) -> str:
        """The public name of the tool in ``slot`` (which must hold one: ``evidence(...).live``)."""
        return self._name_of(slot)

    def search(
        self,
        query: str,
        *,
        limit: int = 3,
        visible: Visibility | None = None,
        withheld: Visibility | None = None,
        query_vector: Matrix | None = None,
    ) -> SearchResult:
        """Ranked visible tools for ``query``; possibly none, which is a correct answer.

        Only the first ``MAX_QUERY_CHARACTERS`` of the query are read. ``query_vector`` is the unit
        vector of ``encoding_text(query)`` when the caller encoded it already (else it is encoded
        here).
        """
        query = query[:MAX_QUERY_CHARACTERS]
        if self._options.known_apps:
            missing = self.not_connected(query, visible, withheld)
            if missing:
                return SearchResult([], [], missing)
        if not self._options.fitted:
            return self._search_floor(query, limit, visible, withheld)
        result = self._search_fitted(query, limit, visible, withheld, query_vector)
        if self._options.known_apps:
            named = self._named_by_ordinary_word(query, result, visible, withheld)
            if named:
                return SearchResult([], [], named)
        return result

    def _named_by_ordinary_word(
        self, query: str, result: SearchResult, visible: Visibility | None, withheld: Visibility | None
    ) -> list[str]:
        """Apps named by an ordinary word in lower case ("create a linear issue") that nobody visible
        carries, decided from the evidence: the word named the app when the best tool the engine
        would return does not hold it (in its name, labels or description), or, with nothing
        returned, when no tool holds it at all. "linear regression" next to a regression tool that
        says "linear" stays a query about that tool (R-5.11)."""
        possible = [
            (app, seq) for app, seq in possible_apps(query) if not self._carried(app, visible, withheld)
        ]
        if not possible:
            return []
        top = self._slot_of.get(result.hits[0].public_name) if result.hits else None
        named = []
        for app, seq in possible:
            words = {stem(w) for w in seq}
            if top is not None:
                fields = self._fields[top]
                assert fields is not None
                held = all(any(w in f for f in fields) for w in words)
            else:
                held = all(self._postings.knows(w) for w in words)
            if not held:
                named.append(app.canonical)
        return named

    def _search_fitted(
        self,
        query: str,
        limit: int,
        visible: Visibility | None,
        withheld: Visibility | None,
        query_vector: Matrix | None,
    ) -> SearchResult:
        evidence = self.evidence(query, query_vector)
        decision = None if evidence is None else self.gate.decide(evidence)
        exact = sorted(self._exact_names.get(_name_key(query), ()), key=self._name_of)
        if decision is None or not decision.answer:
            if not exact:
                return _EMPTY
            chosen, restricted = select(iter(exact), self._name_of, limit, visible, withheld)
            return SearchResult([Hit(self._name_of(s), 0.0, "high") for s in chosen], restricted, [])
        slots = decision.slots[decision.keep]
        score = dict(zip(slots.tolist(), decision.ranked[decision.keep].tolist(), strict=True))
        key = np.full(len(self._docs), -np.inf)
        key[slots] = decision.ranked[decision.keep]
        best = float(decision.ranked[0])
        for slot in exact:  # a query that spells a tool's name finds that tool first
            score[slot] = best
            key[slot] = np.inf
        ranked = ordered(
            np.union1d(slots, exact).astype(np.int64),
            key,
            self._name_of,
            evidence.name_share if evidence else None,
        )
        chosen, restricted = select(ranked, self._name_of, limit, visible, withheld)
        hits = [
            Hit(self._name_of(s), score[s], fitted_confidence(decision.probability, best - score[s]))
            for s in chosen
        ]
        return SearchResult(hits, restricted, [])

    def _search_floor(
        self, query: str, limit: int, visible: Visibility | None, withheld: Visibility | None
    ) -> SearchResult:
        """The hand-set relevance floor of the first engine (kept as the benchmark's baseline)."""
        found = self._weigh(query)
        if found is None:
            return _EMPTY
        weighed = found[0]
        ranked = ordered(
            np.flatnonzero(weighed.passing), weighed.rank_key(), self._name_of, weighed.name_share
        )
        slots, restricted = select(ranked, self._name_of, limit, visible, withheld)
        hits = [
            Hit(self._name_of(s), float(weighed.score[s]), confidence(float(weighed.share[s]), False))  # type: ignore[arg-type]
            for s in slots
        ]
        return SearchResult(hits, restricted, [])

    @property
    def gate(self) -> FittedGate:
        if self._gate is None:
            self._gate = FittedGate.packaged(semantic=self.semantic)
        return self._gate

    def use_gate(self, gate: FittedGate) -> None:
        """Rank and gate with ``gate`` instead of the shipped models (the fitting script does)."""
        self._gate = gate

    def encoding_text(self, query: str) -> str:
        """The text the meaning channel encodes for ``query``: the query, followed by the words its
        mistyped terms were matched to ("wheather in bergen" -> "... weather"), since the encoder
        has no typo tolerance of its own (R-5.7)."""
        found = self._weigh(query[:MAX_QUERY_CHARACTERS])
        return query if found is None else _with_corrections(query, found[2])

    def evidence(self, query: str, query_vector: Matrix | None = None) -> Evidence | None:
        """Everything the ranker and the gate read about ``query``, per slot (None: no term).

        ``query_vector``: the unit vector of ``encoding_text(query)``, when the caller has it."""
        found = self._weigh(query)
        if found is None:
            return None
        weighed, covered, terms = found
        size = len(self._docs)
        label = np.zeros(size)
        for term in terms:
            label[self._postings.label.slots(term.word)] = 1.0
        unmatched = sum(weighed.weights[t.word] for t in terms if not t.match.matched and not t.value)
        cosine = vector = None
        live = self._live_slots()
        if self._meaning is not None:
            text = _with_corrections(query, terms)
            vector = self.encode([text])[0] if query_vector is None else query_vector
            cosine = self._meaning.cosine(vector, size)
        spread = cosine[live] if cosine is not None and live.any() else np.zeros(1)
        evidence = Evidence(
            score=weighed.score,
            share=weighed.share,
            name_share=covered[0],
            name_words=covered[1],
            label=label,
            cosine=cosine,
            cosine_mean=float(spread.mean()),
            cosine_std=float(spread.std()),
            live=live,
            terms=len(terms),
            unmatched=unmatched / weighed.total if weighed.total > 0 else 1.0,
        )
        texts = self._meaning.rows if self._meaning is not None else None
        return with_usage(evidence, self._usage, vector, self._slot_of, self._name_of, self._layout, texts)

    def _live_slots(self) -> npt.NDArray[np.bool_]:
        """Which slots hold a tool (computed once per layout of the index)."""
        if self._live is None or self._live[0] != self._layout:
            size = len(self._docs)
            live = np.fromiter((doc is not None for doc in self._docs), dtype=bool, count=size)
            self._live = (self._layout, live)
        return self._live[1]

    def _weigh(self, query: str) -> tuple[Weighed, tuple[Vector, Vector], list[QueryTerm]] | None:
        options = self._options
        terms = query_words(query, self._postings.knows, stemming=options.stemming)
        if not terms or not len(self):
            return None
        values = value_words(query) if options.drop_values else set()
        apps = {stem(w) for app, seq in mentioned_apps(query) for w in seq} if options.known_apps else set()
        size = len(self._docs)
        norms = (
            self._postings.length_weights(size, options.name_length_b, name=True),
            self._postings.length_weights(size, options.description_length_b),
        )
        scored: list[QueryTerm] = []
        alternatives_of: list[list[str]] = []
        for term in terms:
            if options.drop_values and term.isdigit():
                continue  # a bare numeral is always an argument value, never what a tool does
            alternatives = [term, *(synonyms(term) if options.synonyms else ())]
            alternatives_of.append(alternatives)
            no_typo = term in values or term in apps
            threshold = None if no_typo else options.typo_threshold
            match = match_term(alternatives, self._postings, norms, typo_threshold=threshold)
            alternatives.extend(match.similar)  # a mistyped name word still covers the name
            scored.append(QueryTerm(term, match, term in values))
        weighed = weigh(scored, len(self), size, floor=options.floor, drop_values=options.drop_values)
        if weighed.total <= 0:
            return None
        covered = self._coverage.covered(alternatives_of, self._postings, len(self), size)
        if options.fitted:  # the floor's refinements decide nothing there: score and share are read
            return weighed, covered, scored
        widened = widen(
            weighed,
            covered if options.name_coverage is not None else None,
            share=options.name_coverage or 0.0,
            words=options.name_coverage_words,
            companions=options.companions,
        )
        return widened, covered, scored

    def not_connected(
        self, query: str, visible: Visibility | None = None, withheld: Visibility | None = None
    ) -> list[str]:
        """Known apps ``query`` names that no account the caller can see (or is denied) carries
        (R-5.11; with no ``visible``, that no account of the index carries): ``search`` answers
        those instead of tools, and the fitting counts such a query as settled before the gate."""
        apps = mentioned_apps(query)
        return [app.canonical for app, _ in apps if not self._carried(app, visible, withheld)]

    def _carried(self, app: KnownApp, visible: Visibility | None, withheld: Visibility | None) -> bool:
        """Whether an account or connector label, or a tool's own name ("Zillow",
        "slack_post_message"), that the caller can see (or is denied) carries ``app``."""
        spelled = {"".join(seq) for seq in app.names + app.ambiguous_names}
        # Only accounts whose label names hold one of the app's names can carry it: look those up
        # instead of testing every account's labels.
        candidates = sorted(set().union(*(self._label_accounts.get(name, set()) for name in spelled)))
        slots = [
            slot
            for account in candidates
            if carries(self._labels[account], app)
            for slot in self._accounts[account]
        ]
        slots += sorted(set().union(*(self._tool_names.get(name, set()) for name in spelled)))
        for slot in slots:
            if visible is None:
                return True
            name = self._name_of(slot)
            if visible(name) or (withheld is not None and withheld(name)):
                return True
        return False


def _name_key(text: str) -> tuple[str, ...]:
    """A tool's name (or a query) as the words it spells: ``create_issue``, ``createIssue`` and
    "Create issue" are one key."""
    return tuple(raw_words(text))


def _with_corrections(query: str, terms: list[QueryTerm]) -> str:
    corrections = [t.match.similar[0] for t in terms if t.match.similar]
    return f"{query} {' '.join(corrections)}" if corrections else query
