"""Shared data for the catalog tests: the real catalogs and the lure corpus."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from toolcrib.catalog import ExactRecord, normalize_tool

HERE = Path(__file__).resolve().parent


def shared_dir() -> Path:
    """``shared/`` next to the repository, or where ``TOOLCRIB_SHARED`` says."""
    env = os.environ.get("TOOLCRIB_SHARED")
    return Path(env) if env else HERE.parents[2] / "shared"


def load_real_catalogs() -> dict[str, list[dict[str, Any]]]:
    folder = shared_dir() / "data" / "catalogs"
    return {path.stem: json.loads(path.read_text()) for path in sorted(folder.glob("*.json"))}


def load_lures() -> list[dict[str, str]]:
    lines = (HERE / "lures.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


@pytest.fixture(scope="session")
def real_catalogs() -> dict[str, list[dict[str, Any]]]:
    catalogs = load_real_catalogs()
    if not catalogs:
        pytest.skip("shared/data/catalogs not found (set TOOLCRIB_SHARED)")
    return catalogs


def record_of(schema: dict[str, Any], *, name: str = "do_it", description: str = "Does it.") -> ExactRecord:
    """A normalized record of a one-off tool; fails the test when the tool was refused."""
    record = normalize_tool("acme", "Acme", {"name": name, "description": description, "inputSchema": schema})
    assert record.refused is None, record.refused
    return record
