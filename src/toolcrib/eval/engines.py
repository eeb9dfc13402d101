"""Both evaluation catalogs in real indexes, every set's rows, every query's vector.

An ``Engine`` is one catalog in a real ``SearchIndex``, the one the gateway runs; the fitting and
the cross-validation search through it (``run_set``), so the figures are those of the code path
users get.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from toolcrib.eval.data import SETS, EvalSet, catalog_docs, public_id, read_jsonl
from toolcrib.eval.metrics import Ranking
from toolcrib.search.documents import SearchDoc
from toolcrib.search.index import SearchIndex, SearchResult
from toolcrib.search.semantic import Encoder, doc_text

__all__ = ["Engine", "QueryVectors", "load", "run_set"]

QueryVectors = dict[tuple[str, str], Any]
"""(catalog, query) -> the unit vector of the query's encoding text on that catalog's index."""


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
