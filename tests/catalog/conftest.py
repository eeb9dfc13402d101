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


def load_lures(file: str = "lures.jsonl") -> list[dict[str, str]]:
    lines = (HERE / file).read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def load_all_real_tools() -> list[dict[str, Any]]:
    """Every real tool definition in the shared data: the catalogs, the retrieval catalog and MetaTool's."""
    tools = [tool for tools in load_real_catalogs().values() for tool in tools]
    for path in (
        SHARED / "data" / "retrieval" / "catalog.jsonl",
        SHARED / "data" / "retrieval" / "metatool" / "catalog.jsonl",
    ):
        tools += [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return tools


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
