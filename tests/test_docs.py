"""Docs users read are kept true: the README and docs tables are the benchmarks' JSON, rendered."""

from __future__ import annotations

import subprocess
import sys

from tests.conftest import ROOT


def test_readme_and_docs_tables_match_the_benchmark_json() -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "report.py"), "--check"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_every_marked_table_has_its_json_committed() -> None:
    marked = {
        "search-quality": "search_quality.json",
        "search-speed": "search_speed.json",
        "overhead": "overhead.json",
    }
    for doc in (ROOT / "README.md", ROOT / "docs" / "search.md", ROOT / "docs" / "performance.md"):
        text = doc.read_text(encoding="utf-8")
        for name, source in marked.items():
            if f"<!-- {name}:begin -->" in text:
                assert (ROOT / "bench" / "out" / source).exists()
