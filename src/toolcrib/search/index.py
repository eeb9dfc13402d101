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

from toolcrib.search.coverage import NameCoverage, name_parts
from toolcrib.search.floor import QueryTerm, Weighed, weigh, widen
from toolcrib.search.known_apps import KnownApp, carries, label_names, mentioned_apps
from toolcrib.search.lexical import match_term
from toolcrib.search.options import SearchOptions
from toolcrib.search.postings import Postings
from toolcrib.search.ranking import confidence, ordered, select
from toolcrib.search.semantic import MeaningChannel
from toolcrib.search.synonyms import synonyms
from toolcrib.search.tokenize import query_words, stem, words
from toolcrib.search.values import value_words

__all__ = ["Hit", "SearchDoc", "SearchIndex", "SearchResult"]

Visibility = Callable[[str], bool]
Fields = tuple[frozenset[str], frozenset[str], frozenset[str]]


@dataclass(frozen=True, slots=True)
class SearchDoc:
    public_name: str  # "{account}__{tool}"
    account: str  # e.g. "notion-legal"
    connector: str  # connector label, e.g. "Notion"
    name: str  # provider tool name, e.g. "create_page"
    description: str  # provider description (already sanitized/bounded by the catalog)


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


_EMPTY = SearchResult([], [], [])


class SearchIndex:
    """Connected tools, searchable by intent (R-5.2..R-5.11)."""

    def __init__(self, *, semantic: bool = False, options: SearchOptions | None = None) -> None:
        self._options = options or SearchOptions()
        self._docs: list[SearchDoc | None] = []
        self._fields: list[Fields | None] = []
        self._free: list[int] = []
        self._accounts: dict[str, list[int]] = {}
        self._labels: dict[str, frozenset[str]] = {}
        self._label_accounts: dict[str, set[str]] = {}  # a label name -> the accounts whose labels hold it
        self._postings = Postings()
        self._coverage = NameCoverage()
        self._meaning = MeaningChannel.load() if semantic else None

    @property
    def semantic(self) -> bool:
        """Whether the meaning channel (R-5.8) is in use."""
        return self._meaning is not None

    def __len__(self) -> int:
        return len(self._docs) - len(self._free)

    def replace_account(self, account: str, docs: Sequence[SearchDoc]) -> None:
        """Make ``docs`` the account's tools, touching no other account."""
        self.remove_account(account)
        if not docs:
            return
        slots = [self._add(doc) for doc in docs]
        self._accounts[account] = slots
        self._labels[account] = label_names(*{account, *(doc.connector for doc in docs)})
        for name in self._labels[account]:
            self._label_accounts.setdefault(name, set()).add(account)
        if self._meaning is not None:
            self._meaning.add([(slot, doc) for slot, doc in zip(slots, docs, strict=True)])

    def remove_account(self, account: str) -> None:
        for slot in self._accounts.pop(account, []):
            fields = self._fields[slot]
            assert fields is not None
            self._postings.remove(slot, fields)
            self._coverage.discard(slot)
            self._docs[slot] = None
            self._fields[slot] = None
            self._free.append(slot)
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

    def search(
        self,
        query: str,
        *,
        limit: int = 3,
        visible: Visibility | None = None,
        withheld: Visibility | None = None,
    ) -> SearchResult:
        """Ranked visible tools for ``query``; possibly none, which is a correct answer."""
        if self._options.known_apps:
            missing = self._not_connected(mentioned_apps(query), visible, withheld)
            if missing:
                return SearchResult([], [], missing)
        weighed = self._weigh(query)
        if weighed is None:
            return _EMPTY
        key, shown = weighed.rank_key(), weighed.score
        eligible, lifted = weighed.passing, np.zeros(len(self._docs), dtype=bool)
        if self._meaning is not None:
            key, eligible, lifted = self._meaning.rerank(query, weighed, self._options)
            shown = key
        ranked = ordered(np.flatnonzero(eligible), key, self._name_of, weighed.name_share)
        slots, restricted = select(ranked, self._name_of, limit, visible, withheld)
        hits = [
            Hit(self._name_of(s), float(shown[s]), confidence(float(weighed.share[s]), bool(lifted[s])))  # type: ignore[arg-type]
            for s in slots
        ]
        return SearchResult(hits, restricted, [])

    def _weigh(self, query: str) -> Weighed | None:
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
            scored.append(QueryTerm(term, match, term in values))
        weighed = weigh(scored, len(self), size, floor=options.floor, drop_values=options.drop_values)
        if weighed.total <= 0:
            return None
        coverage = None
        if options.name_coverage is not None:
            coverage = self._coverage.covered(alternatives_of, self._postings, len(self), size)
        return widen(
            weighed,
            coverage,
            share=options.name_coverage or 0.0,
            words=options.name_coverage_words,
            companions=options.companions,
        )

    def _not_connected(
        self,
        apps: list[tuple[KnownApp, tuple[str, ...]]],
        visible: Visibility | None,
        withheld: Visibility | None,
    ) -> list[str]:
        """Named known apps that no account the caller can see (or is denied) carries."""
        return [app.canonical for app, _ in apps if not self._carried(app, visible, withheld)]

    def _carried(self, app: KnownApp, visible: Visibility | None, withheld: Visibility | None) -> bool:
        # Only accounts whose label names hold one of the app's names can carry it: look those up
        # instead of testing every account's labels.
        spelled = {"".join(seq) for seq in app.names + app.ambiguous_names}
        candidates = sorted(set().union(*(self._label_accounts.get(name, set()) for name in spelled)))
        for account in candidates:
            if not carries(self._labels[account], app):
                continue
            if visible is None:
                return True
            for slot in self._accounts[account]:
                name = self._name_of(slot)
                if visible(name) or (withheld is not None and withheld(name)):
                    return True
        return False
