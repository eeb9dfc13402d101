"""Fit the ranker and the answer gate (SPEC R-5.3, R-5.8, R-5.12), report them cross-validated, ship them.

.venv/bin/python bench/fit_gate.py [--folds 5] [--no-write] [--design relative]

With the meaning channel it also measures the usage channel's learning curve (R-5.12): held-out
figures with 0, 1, 2, 4 and 8 past searches per tool replayed from the training folds, beside the
same run's models fitted without the usage features at all (the cold baseline the curve must not
fall under at 0). At each level it reports the three cases of #31 apart: (a) requests whose right
tool has its past searches, (b) the same requests with their right tools' past searches forgotten
while about half of the other tools keep their own (``"siblings"``), (c) requests that need no
tool (or name an unconnected app) with every tool's history present. Written to
bench/out/learning_curve.json and plotted to docs/learning_curve.png. ``--design`` measures another
reading of the usage channel (``gate.DESIGNS``; with ``--no-write``, nothing shipped changes).

The fitting itself is ``toolcrib.eval`` (``eval.data`` tells the data, ``eval.crossval`` the
cross-validation, ``eval.history`` the simulated use). This script caches the encoder's vectors
in bench/out/vectors.npz, prints the held-out figures of both modes (with and without the
meaning channel), writes them to bench/out/gate_cv.json, and writes the models fitted on all the data to
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
from toolcrib.eval.crossval import cross_validate, learning_curve
from toolcrib.eval.engines import load
from toolcrib.eval.examples import collect
from toolcrib.eval.fitting import DESIGN, KEEP, fit
from toolcrib.eval.history import LEVELS
from toolcrib.search.gate import DESIGNS
from toolcrib.search.semantic import load_encoder
from toolcrib.search.vectors import MODEL_ID

ROOT = Path(__file__).resolve().parents[1]
GATE_JSON = ROOT / "src" / "toolcrib" / "search" / "model" / "gate.json"
CURVE_PNG = ROOT / "docs" / "learning_curve.png"
CURVE_SETS = ("metatool", "intents_dev", "livemcpbench")


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


def plot_curve(curve: dict[str, dict[str, dict[str, Any]]], path: Path) -> None:
    """hit@1 and hit@3 against past searches per tool, one line per set (matplotlib, no display)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    levels = [int(level) for level in curve if level != "baseline"]
    figure, axes = plt.subplots(1, 2, figsize=(9, 3.6), sharey=True)
    for axis, metric in zip(axes, ("hit@1", "hit@3"), strict=True):
        for name in CURVE_SETS:
            axis.plot(levels, [curve[str(lv)][name][metric] for lv in levels], marker="o", label=name)
            axis.axhline(curve["baseline"][name][metric], linestyle=":", linewidth=0.8)
        axis.set_xscale("symlog", base=2)
        axis.set_xticks(levels, [str(lv) for lv in levels])
        axis.set_xlabel("past searches per tool (from the training folds)")
        axis.set_title(f"{metric}, held-out (dotted: no usage channel)")
        axis.grid(alpha=0.3)
    axes[0].set_ylabel("share of held-out requests")
    axes[1].legend(loc="lower right")
    figure.tight_layout()
    figure.savefig(path, dpi=110, metadata={"Software": None})
    plt.close(figure)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--keep", type=float, default=KEEP)
    parser.add_argument("--no-write", action="store_true")
    parser.add_argument("--design", choices=DESIGNS, default=DESIGN)
    args = parser.parse_args()
    shipped: dict[str, Any] = {
        "doc": "Written by bench/fit_gate.py; fitted on the public evaluation sets. Do not edit by hand."
    }
    report: dict[str, Any] = {}
    curve: dict[str, Any] = {}
    for semantic in (True, False):
        loaded = load_encoder()[0] if semantic else None
        engines, rows, vectors = load(DATA, CachedEncoder(loaded) if loaded is not None else None)
        queries = collect(engines, rows, vectors, args.folds)
        mode = "semantic" if semantic else "lexical"
        if semantic:
            baseline = cross_validate(
                queries, engines, rows, vectors, args.folds, True, args.keep, usage=False
            )
            print_table(f"{mode}, no usage channel: {args.folds}-fold cross-validated", baseline)
            levels = learning_curve(
                queries, engines, rows, vectors, args.folds, True, args.keep, LEVELS, design=args.design
            )
            for level, figures in levels.items():
                held = {name: values for name, values in figures.items() if name != "siblings"}
                print_table(
                    f"{mode}, {level} past searches per tool (a, c): {args.folds}-fold held-out", held
                )
                if "siblings" in figures:
                    title = (
                        f"{mode}, {level} per tool, right tools' forgotten (b): {args.folds}-fold held-out"
                    )
                    print_table(title, figures["siblings"])
            curve = {"baseline": baseline, **{str(level): figures for level, figures in levels.items()}}
            figures = levels[0]
        else:
            figures = cross_validate(
                queries, engines, rows, vectors, args.folds, False, args.keep, design=args.design
            )
            print_table(f"{mode}: {args.folds}-fold cross-validated (held-out folds only)", figures)
        report[mode] = figures
        shipped[mode] = fit(queries, semantic, args.keep, design=args.design).to_json()
    OUT.mkdir(exist_ok=True)
    (OUT / "gate_cv.json").write_text(json.dumps(report, indent=2))
    (OUT / "learning_curve.json").write_text(json.dumps(curve, indent=2))
    plot_curve(curve, CURVE_PNG)
    if not args.no_write:
        GATE_JSON.write_text(json.dumps(shipped, indent=1) + "\n")
    print(json.dumps(report))


if __name__ == "__main__":
    main()
