"""Command-line start-up: ``toolcrib --help`` against ``python -c pass`` (#13).

Each command is run several times as a real process; the table and bench/out/cli.json give the
median and the minimum wall time of each, and the ratio of ``--help`` to bare Python (the machine's
load moves both alike). Also measured: ``toolcrib --version``, ``toolcrib connections --help``, and
``toolcrib connections list``: a one-shot command that opens the gateway on a SQLite file (made by
``toolcrib init`` first, in a temporary folder) and reaches no upstream.
Run: ``.venv/bin/python bench/cli.py [--runs N]``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "bench" / "out"
COMMANDS = {
    "python -c pass": [sys.executable, "-c", "pass"],
    "toolcrib --help": [sys.executable, "-m", "toolcrib.cli", "--help"],
    "toolcrib --version": [sys.executable, "-m", "toolcrib.cli", "--version"],
    "toolcrib connections --help": [sys.executable, "-m", "toolcrib.cli", "connections", "--help"],
    "toolcrib connections list": [sys.executable, "-m", "toolcrib.cli", "connections", "list"],
}
ONE_SHOT = ("toolcrib connections list",)
"""Commands that open the gateway: run with ``--database`` naming the bench's own SQLite file."""


def wall_times(argv: list[str], runs: int) -> list[float]:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src") + os.pathsep + os.environ.get("PYTHONPATH", "")}
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        subprocess.run(argv, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, check=True)
        times.append(time.perf_counter() - started)
    return times


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=7)
    runs = parser.parse_args().runs
    with tempfile.TemporaryDirectory() as folder:
        database = f"sqlite:///{Path(folder) / 'toolcrib.db'}"
        wall_times([sys.executable, "-m", "toolcrib.cli", "init", "--database", database], 1)
        commands = {
            name: [*argv, "--database", database] if name in ONE_SHOT else argv
            for name, argv in COMMANDS.items()
        }
        for argv in commands.values():  # warm the file cache and the bytecode once
            wall_times(argv, 1)
        rows = _measure(commands, runs)
    _report(rows, runs)


def _measure(commands: dict[str, list[str]], runs: int) -> dict[str, dict[str, float]]:
    rows = {}
    for name, argv in commands.items():
        times = wall_times(argv, runs)
        rows[name] = {"median_s": round(statistics.median(times), 4), "min_s": round(min(times), 4)}
    return rows


def _report(rows: dict[str, dict[str, float]], runs: int) -> None:
    base = rows["python -c pass"]["median_s"]
    for row in rows.values():
        row["ratio_to_python"] = round(row["median_s"] / base, 2)
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"CLI start-up, {runs} runs each (load average {os.getloadavg()[0]:.1f})")
    for column in ("command", "median s", "min s", "× python -c pass"):
        table.add_column(column, justify="left" if column == "command" else "right")
    for name, row in rows.items():
        table.add_row(name, f"{row['median_s']:.3f}", f"{row['min_s']:.3f}", f"{row['ratio_to_python']:.1f}")
    Console().print(table)
    OUT.mkdir(parents=True, exist_ok=True)
    result = {"runs": runs, "load_average": round(os.getloadavg()[0], 2), "commands": rows}
    (OUT / "cli.json").write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {OUT / 'cli.json'}")


if __name__ == "__main__":
    main()
