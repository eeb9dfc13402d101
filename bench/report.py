"""Render the README and docs tables from the benchmarks' JSON (bench/out/*.json), never by hand.

.venv/bin/python bench/report.py          # rewrite the marked tables in README.md and docs/search.md
.venv/bin/python bench/report.py --check  # exit 1 when a marked table differs from its JSON

A marked table sits between ``<!-- NAME:begin -->`` and ``<!-- NAME:end -->``; NAME is the JSON file
it comes from (``search-quality`` <- bench/out/search_quality.json). tests/test_docs.py runs the
check, so a table that drifts from its figures fails the suite.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "bench" / "out"
DOCS = (ROOT / "README.md", ROOT / "docs" / "search.md")

QUALITY_COLUMNS = (
    ("dev hit@1", "intents_dev", "hit@1"),
    ("dev hit@3", "intents_dev", "hit@3"),
    ("dev answered", "intents_dev", "positives_non_empty"),
    ("dev impossible empty", "intents_dev", "negatives_empty"),
    ("MetaTool hit@1", "metatool", "hit@1"),
    ("MetaTool hit@3", "metatool", "hit@3"),
    ("MetaTool answered", "metatool", "positives_non_empty"),
    ("MetaTool no-tool empty", "metatool_no_tool", "negatives_empty"),
    ("LiveMCPBench R@5", "livemcpbench", "r@5"),
    ("leave-servers-out empty", "leave_servers_out", "negatives_empty"),
)


def _cell(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def search_quality(data: dict[str, Any]) -> str:
    header = "| system | " + " | ".join(c[0] for c in QUALITY_COLUMNS) + " |"
    rule = "|---|" + "---|" * len(QUALITY_COLUMNS)
    lines = [header, rule]
    for system, figures in data["results"].items():
        cells = [_cell(figures[s][m]) for _, s, m in QUALITY_COLUMNS]
        lines.append(f"| {system} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


RENDERERS = {"search-quality": ("search_quality.json", search_quality)}


def rendered(text: str) -> str:
    for name, (source, render) in RENDERERS.items():
        path = OUT / source
        if not path.exists():
            continue
        table = render(json.loads(path.read_text(encoding="utf-8")))
        pattern = re.compile(rf"(<!-- {name}:begin -->\n)(?:.*?\n)?(<!-- {name}:end -->)", re.DOTALL)
        text = pattern.sub(lambda m, t=table: m.group(1) + t + "\n" + m.group(2), text)
    return text


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--check", action="store_true")
    args = parser.parse_args()
    stale = []
    for doc in DOCS:
        text = doc.read_text(encoding="utf-8")
        new = rendered(text)
        if new != text:
            stale.append(doc.name)
            if not args.check:
                doc.write_text(new, encoding="utf-8")
    if args.check and stale:
        print(f"tables differ from bench/out/*.json: {', '.join(stale)} (run bench/report.py)")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
