"""Shared loading for the search benchmarks."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from toolcrib.eval.data import catalog_docs
from toolcrib.search import SearchDoc

# shared/ stands beside the repository; TOOLCRIB_SHARED overrides.
DATA = (
    Path(os.environ.get("TOOLCRIB_SHARED", Path(__file__).resolve().parents[2] / "shared"))
    / "data"
    / "retrieval"
)
OUT = Path(__file__).parent / "out"


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    with path.open(encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def catalog() -> dict[str, list[SearchDoc]]:
    return catalog_docs(read_jsonl(DATA / "catalog.jsonl"))


def grown(base: dict[str, list[SearchDoc]], size: int) -> dict[str, list[SearchDoc]]:
    """The real catalog cloned under more account names until it holds ``size`` tools."""
    out: dict[str, list[SearchDoc]] = {}
    total, copy = 0, 0
    while total < size:
        for account, docs in base.items():
            name = account if copy == 0 else f"{account}-{copy}"
            take = docs[: size - total]
            out[name] = [
                SearchDoc(f"{name}__{d.name}", name, d.connector, d.name, d.description) for d in take
            ]
            total += len(take)
            if total >= size:
                break
        copy += 1
    return out
