"""Fit the ranker and the answer gate (SPEC R-5.3, R-5.8), report them cross-validated, ship them.

.venv/bin/python bench/fit_gate.py [--folds 5] [--no-write]

The fitting itself is ``toolcrib.search.fitting`` (its docstring tells the data and the
cross-validation). This script caches the encoder's vectors in bench/out/vectors.npz, prints the
held-out figures of both modes (with and without the meaning channel), writes them to
bench/out/gate_cv.json, and writes the models fitted on all the data to
src/toolcrib/search/model/gate.json. Figures on the data the shipped models were fitted on would
be fitted figures, and are never printed.
"""

from __future__ import annotations

import argparse
import hashlib
import json
from pathlib import Path
from typing import Any

import numpy as np
from rich.console import Console
from rich.table import Table

from _catalog import DATA, OUT
from toolcrib.search.fitting import KEEP, collect, cross_validate, fit, load
from toolcrib.search.semantic import load_encoder
from toolcrib.search.vectors import MODEL_ID

GATE_JSON = Path(__file__).resolve().parents[1] / "src" / "toolcrib" / "search" / "model" / "gate.json"


class CachedEncoder:
    """The real encoder behind a file cache of its vectors (bench/out/vectors-MODEL_ID.npz), by text
    hash, so that refitting does not re-encode ~3,500 unchanged texts; another model, another file."""

    path = OUT / f"vectors-{MODEL_ID}.npz"

    def __init__(self, encoder: Any) -> None:
        self._encoder = encoder
        self._cache: dict[str, np.ndarray] = {}
        if self.path.exists():
            with np.load(self.path) as data:
                self._cache = {key: data[key] for key in data.files}

    def encode(self, texts: list[str]) -> np.ndarray:
        keys = [hashlib.sha256(t.encode()).hexdigest() for t in texts]
        missing = sorted({k: t for k, t in zip(keys, texts, strict=True) if k not in self._cache}.items())
        if missing:
            for (key, _), vector in zip(missing, self._encoder.encode([t for _, t in missing]), strict=True):
                self._cache[key] = vector
            OUT.mkdir(exist_ok=True)
            partial = self.path.with_suffix(".partial.npz")  # a run cut off mid-write leaves no torn cache
            np.savez(partial, **self._cache)
            partial.replace(self.path)
        return np.stack([self._cache[k] for k in keys]) if keys else np.zeros((0, 384), dtype=np.float32)


COLUMNS = ("hit@1", "hit@3", "positives_non_empty", "negatives_empty", "r@5")


def print_table(title: str, figures: dict[str, dict[str, Any]]) -> None:
    table = Table(title=title)
    table.add_column("set")
    for column in COLUMNS:
        table.add_column(column, justify="right")
    for name, values in figures.items():
        table.add_row(name, *("-" if values[c] is None else f"{values[c]:.3f}" for c in COLUMNS))
    Console().print(table)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--keep", type=float, default=KEEP)
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args()
    shipped: dict[str, Any] = {
        "doc": "Written by bench/fit_gate.py; fitted on the public evaluation sets. Do not edit by hand."
    }
    report: dict[str, Any] = {}
    for semantic in (True, False):
        loaded = load_encoder()[0] if semantic else None
        engines, rows, vectors = load(DATA, CachedEncoder(loaded) if loaded is not None else None)
        examples = collect(engines, rows, vectors, args.folds)
        figures = cross_validate(examples, engines, rows, vectors, args.folds, semantic, args.keep)
        mode = "semantic" if semantic else "lexical"
        print_table(f"{mode}: {args.folds}-fold cross-validated (held-out folds only)", figures)
        report[mode] = figures
        shipped[mode] = fit(examples, semantic, args.keep).to_json()
    OUT.mkdir(exist_ok=True)
    (OUT / "gate_cv.json").write_text(json.dumps(report, indent=2))
    if not args.no_write:
        GATE_JSON.write_text(json.dumps(shipped, indent=1) + "\n")
    print(json.dumps(report))


if __name__ == "__main__":
    main()
