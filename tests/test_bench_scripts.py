"""The benchmarks run against today's code: each script under ``bench/`` imports cleanly.

The type checker covers the package only, so a renamed function (``authenticate`` became
``Bearers.authenticate`` in #33) once left two benchmarks unable to start with every test green.
Importing them (their module level: the ``main`` of each runs only as a script) catches that
before a measurement is due.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = sorted(p.stem for p in (ROOT / "bench").glob("*.py"))


def test_every_benchmark_script_imports_against_the_current_code() -> None:
    assert "search_speed" in SCRIPTS  # the folder was found
    program = "import importlib, sys\nfor name in sys.argv[1:]:\n    importlib.import_module(name)\n"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT / "bench"), str(ROOT)])}
    done = subprocess.run(
        [sys.executable, "-c", program, *SCRIPTS],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
