"""Shared data for the catalog tests: the real catalogs and the lure corpus."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import SHARED
from toolcrib.catalog import ExactRecord, normalize_tool

HERE = Path(__file__).resolve().parent


def load_real_catalogs() -> dict[str, list[dict[str, Any]]]:
    folder = SHARED / "data" / "catalogs"
    return {path.stem: json.loads(path.read_text()) for path in sorted(folder.glob("*.json"))}


def load_lures() -> list[dict[str, str]]:
    lines = (HERE / "lures.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


@pytest.fixture(scope="session")
def real_catalogs() -> dict[str, list[dict[str, Any]]]:
    catalogs = load_real_catalogs()
    assert catalogs, f"no catalogs under {SHARED / 'data' / 'catalogs'} (set TOOLCRIB_SHARED)"
    return catalogs


def record_of(schema: dict[str, Any], *, name: str = "do_it", description: str = "Does it.") -> ExactRecord:
    """A normalized record of a one-off tool; fails the test when the tool was refused."""
    record = normalize_tool("acme", "Acme", {"name": name, "description": description, "inputSchema": schema})
    assert record.refused is None, record.refused
    return record
