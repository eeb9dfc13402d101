"""Docs users read are kept true: the README and docs tables are the benchmarks' JSON, rendered."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from types import ModuleType

from tests.conftest import ROOT


def test_readme_and_docs_tables_match_the_benchmark_json() -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "report.py"), "--check"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def _report() -> ModuleType:
    """bench/report.py itself: its RENDERERS name each marked table's JSON, its DOCS the files."""
    spec = importlib.util.spec_from_file_location("bench_report", ROOT / "bench" / "report.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_marked_table_has_its_json_committed() -> None:
    report = _report()
    marked = 0
    for doc in report.DOCS:
        text = doc.read_text(encoding="utf-8")
        for name, (source, _) in report.RENDERERS.items():
            if f"<!-- {name}:begin -->" in text:
                marked += 1
                assert (report.OUT / source).exists(), (doc.name, source)
    assert marked >= len(report.RENDERERS)  # each renderer draws at least one table
