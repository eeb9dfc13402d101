"""Command-line start-up: ``toolcrib --help`` against ``python -c pass`` (#13).

Each command is run several times as a real process; the table and bench/out/cli.json give the
median and the minimum wall time of each, and the ratio of ``--help`` to bare Python (the machine's
load moves both alike). Also measured: ``toolcrib --version``, ``toolcrib connections --help``, and
``toolcrib connections list``: a one-shot command that opens the organization's store on a SQLite
file (made by ``toolcrib init`` first, in a temporary folder) and reaches no upstream.

Its baseline (#33) is importing SQLAlchemy's async engine and aiosqlite alone, the database layer
any such command needs: ``connections list`` should take at most 1.8 times as long. Beside it, the
SQLite floor: the same imports, then ``create_async_engine``, one connection and ``SELECT 1`` on
the bench's file (what reading the organization costs before toolcrib does anything).

Bytecode is written and kept as an installed package has it (``PYTHONDONTWRITEBYTECODE`` is
dropped from the commands' environment): the warm-up run compiles, the measured runs read it.
``--against SRC`` also runs ``connections list`` from another source tree (say, an earlier commit's
``src`` from ``git archive``) in the same rounds, on the same file: a before/after in one run,
printed and kept under ``against`` in the JSON (the rendered table shows this tree only).
Run: ``.venv/bin/python bench/cli.py [--runs N] [--against SRC]``.
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
BASELINE = "import sqlalchemy.ext.asyncio, aiosqlite"
FLOOR = "SQLite floor: those imports, engine, connect, SELECT 1"
SQLITE_FLOOR = """
import asyncio, sys
from sqlalchemy import text
from sqlalchemy.ext.asyncio import create_async_engine

async def main():
    engine = create_async_engine("sqlite+aiosqlite:///" + sys.argv[1])
    async with engine.connect() as connection:
        await connection.execute(text("SELECT 1"))
    await engine.dispose()

asyncio.run(main())
"""
COMMANDS = {
    "python -c pass": [sys.executable, "-c", "pass"],
    "toolcrib --help": [sys.executable, "-m", "toolcrib.cli", "--help"],
    "toolcrib --version": [sys.executable, "-m", "toolcrib.cli", "--version"],
    "toolcrib connections --help": [sys.executable, "-m", "toolcrib.cli", "connections", "--help"],
    "toolcrib connections list": [sys.executable, "-m", "toolcrib.cli", "connections", "list"],
    BASELINE: [sys.executable, "-c", "import sqlalchemy.ext.asyncio, aiosqlite"],
    FLOOR: [sys.executable, "-c", SQLITE_FLOOR],
}
ONE_SHOT = ("toolcrib connections list",)
"""Commands that open the organization: run with ``--database`` naming the bench's own SQLite file."""
TARGET = 1.8
"""#33: a one-shot command within this many times its baseline."""
AGAINST = "toolcrib connections list, --against's tree"


def wall_times(argv: list[str], runs: int, src: Path = ROOT / "src") -> list[float]:
    env = {**os.environ, "PYTHONPATH": str(src) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        subprocess.run(argv, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, check=True)
        times.append(time.perf_counter() - started)
    return times


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--against", type=Path, help="another source tree's src, run in the same rounds")
    args = parser.parse_args()
    runs = args.runs
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "toolcrib.db"
        database = f"sqlite:///{path}"
        wall_times([sys.executable, "-m", "toolcrib.cli", "init", "--database", database], 1)
        commands = {
            name: [*argv, "--database", database]
            if name in ONE_SHOT
            else [*argv, str(path)]
            if name == FLOOR
            else argv
            for name, argv in COMMANDS.items()
        }
        trees = dict.fromkeys(commands, ROOT / "src")
        if args.against is not None:
            commands[AGAINST], trees[AGAINST] = commands[ONE_SHOT[0]], args.against.resolve()
        for name, argv in commands.items():  # warm the file cache and the bytecode once
            wall_times(argv, 1, trees[name])
        rows = _measure(commands, trees, runs)
    _report(rows, runs, args.against)


def _measure(
    commands: dict[str, list[str]], trees: dict[str, Path], runs: int
) -> dict[str, dict[str, float]]:
    """Each command once per round, ``runs`` rounds: a change of the machine's load falls on
    every command alike, not on whichever ran while it lasted."""
    times: dict[str, list[float]] = {name: [] for name in commands}
    for _ in range(runs):
        for name, argv in commands.items():
            times[name] += wall_times(argv, 1, trees[name])
    return {
        name: {"median_s": round(statistics.median(t), 4), "min_s": round(min(t), 4)}
        for name, t in times.items()
    }


def _report(rows: dict[str, dict[str, float]], runs: int, against: Path | None) -> None:
    other = rows.pop(AGAINST, None)
    base = rows["python -c pass"]["median_s"]
    for row in rows.values():
        row["ratio_to_python"] = round(row["median_s"] / base, 2)
    baseline, floor = rows[BASELINE]["median_s"], rows[FLOOR]["median_s"]
    for name in ONE_SHOT:
        rows[name]["ratio_to_baseline"] = round(rows[name]["median_s"] / baseline, 2)
        rows[name]["ratio_to_floor"] = round(rows[name]["median_s"] / floor, 2)
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"CLI start-up, {runs} runs each (load average {os.getloadavg()[0]:.1f})")
    for column in ("command", "median s", "min s", "× python -c pass"):
        table.add_column(column, justify="left" if column == "command" else "right")
    for name, row in rows.items():
        table.add_row(name, f"{row['median_s']:.3f}", f"{row['min_s']:.3f}", f"{row['ratio_to_python']:.1f}")
    Console().print(table)
    for name in ONE_SHOT:
        ratio = rows[name]["ratio_to_baseline"]
        print(
            f"{name}: {ratio:.2f} x baseline (target <= {TARGET}), {rows[name]['ratio_to_floor']:.2f} x floor"
        )
    if other is not None:
        other["ratio_to_baseline"] = round(other["median_s"] / baseline, 2)
        print(
            f"the same from {against}: {other['median_s']:.3f} s, {other['ratio_to_baseline']:.2f} x baseline"
        )
    OUT.mkdir(parents=True, exist_ok=True)
    result = {
        "runs": runs,
        "load_average": round(os.getloadavg()[0], 2),
        "baseline": BASELINE,
        "floor": FLOOR,
        "target_ratio": TARGET,
        "commands": rows,
    }
    if other is not None:
        result["against"] = {"src": str(against), **other}
    (OUT / "cli.json").write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {OUT / 'cli.json'}")


if __name__ == "__main__":
    main()
