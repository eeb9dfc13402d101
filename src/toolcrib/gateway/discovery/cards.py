"""Cards built once per tool, off the event loop, not once per search (R-4.5..R-4.8).

Building a card sanitizes every description it shows; for a tool with hundreds of parameters that
is real CPU work. A card depends on the exact record (its schema, hash and prose), the tool's
classification and its frozen parameters, and on nothing else: it is cached under the record it
was built from, by (risk, frozen keys). A new catalog brings new records, so a card of an old
record is never served for a new one; a changed classification or frozen set is another key.

The gateway fills the cache at catalog sync in a worker thread; a search finds its cards there and
builds only what a policy change made missing (again in a worker thread).
"""

from __future__ import annotations

import copy
from collections.abc import Collection, Iterable
from typing import Any

from toolcrib.catalog.records import ExactRecord

__all__ = ["CardCache", "CardKey"]

CardKey = tuple[str, frozenset[str]]  # (risk, frozen parameter names)


class CardCache:
    """Cards by public name, each kept with the record it was built from."""

    def __init__(self) -> None:
        self._cards: dict[str, tuple[ExactRecord, dict[CardKey, dict[str, Any]]]] = {}
        self.built = 0
        """Cards built by this process (a test counts them)."""

    def get(self, record: ExactRecord, risk: str, frozen: Collection[str]) -> dict[str, Any] | None:
        """A copy of the cached card of ``record`` (callers add handles to it), or None."""
        held = self._cards.get(record.public_name)
        if held is None or held[0] is not record:
            return None
        card = held[1].get((risk, frozenset(frozen)))
        return copy.deepcopy(card) if card is not None else None

    def build(self, wanted: Iterable[tuple[ExactRecord, str, Collection[str]]]) -> None:
        """Build and keep the cards not cached yet. CPU work: run it in a worker thread."""
        from toolcrib.catalog.cards import (
            build_card,
        )  # with the first cards: a one-shot command builds none (#33)

        for record, risk, frozen in wanted:
            key = (risk, frozenset(frozen))
            held = self._cards.get(record.public_name)
            if held is None or held[0] is not record:
                held = (record, {})
            if key not in held[1]:
                held[1][key] = build_card(record, risk=risk, frozen=frozen)
                self.built += 1
            self._cards[record.public_name] = held

    def put(self, record: ExactRecord, risk: str, frozen: Collection[str], card: dict[str, Any]) -> None:
        """Keep a card just built by ``build_card(record, risk=risk, frozen=frozen)`` (a sync does)."""
        held = self._cards.get(record.public_name)
        if held is None or held[0] is not record:
            held = (record, {})
        held[1][(risk, frozenset(frozen))] = copy.deepcopy(card)
        self._cards[record.public_name] = held

    def forget(self, public_names: Iterable[str]) -> None:
        for name in public_names:
            self._cards.pop(name, None)
