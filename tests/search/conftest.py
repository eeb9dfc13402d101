"""Shared builders for the search tests."""

from __future__ import annotations

import json

import pytest
from tests.conftest import SHARED

from toolcrib.eval.data import catalog_docs
from toolcrib.search import SearchDoc

DATA = SHARED / "data" / "retrieval"


def doc(account: str, name: str, description: str = "", connector: str = "Custom") -> SearchDoc:
    return SearchDoc(f"{account}__{name}", account, connector, name, description)


@pytest.fixture(scope="session")
def catalog() -> dict[str, list[SearchDoc]]:
    assert (DATA / "catalog.jsonl").exists(), f"the evaluation data is missing: {DATA}"
    with (DATA / "catalog.jsonl").open(encoding="utf-8") as handle:
        return catalog_docs(json.loads(line) for line in handle)
