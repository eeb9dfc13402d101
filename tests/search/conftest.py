"""Shared builders for the search tests."""

from __future__ import annotations

import json

import pytest
from tests.conftest import SHARED

from toolcrib.search import SearchDoc, SearchIndex
from toolcrib.search.evaluate import catalog_docs

DATA = SHARED / "data" / "retrieval"


def doc(account: str, name: str, description: str = "", connector: str = "Custom") -> SearchDoc:
    return SearchDoc(f"{account}__{name}", account, connector, name, description)


@pytest.fixture(scope="session")
def catalog() -> dict[str, list[SearchDoc]]:
    if not (DATA / "catalog.jsonl").exists():
        pytest.skip("evaluation data not present")
    with (DATA / "catalog.jsonl").open(encoding="utf-8") as handle:
        return catalog_docs(json.loads(line) for line in handle)


@pytest.fixture(scope="session")
def catalog_index(catalog: dict[str, list[SearchDoc]]) -> SearchIndex:
    index = SearchIndex()
    for account, docs in catalog.items():
        index.replace_account(account, docs)
    return index
