"""Render the README and docs tables from the benchmarks' JSON (bench/out/*.json), never by hand.

.venv/bin/python bench/report.py          # rewrite the marked tables in README.md and docs/
.venv/bin/python bench/report.py --check  # exit 1 when a marked table differs from its JSON

A marked table sits between ``<!-- NAME:begin -->`` and ``<!-- NAME:end -->``; NAME is the JSON file
it comes from (``search-quality`` <- bench/out/search_quality.json, ``search-speed`` <-
search_speed.json, ``overhead`` <- overhead.json, ``learning-curve`` <- learning_curve.json).
tests/test_docs.py runs the check, so a table
that drifts from its figures fails the suite.
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
DOCS = (ROOT / "README.md", ROOT / "docs" / "search.md", ROOT / "docs" / "performance.md")

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


def search_speed(data: dict[str, Any]) -> str:
    idx = data["indexing"]
    lines = [
        f"| catalog indexing ({idx['tools']} tools, store -> index) "
        "| seconds | tools/s | event-loop lag p99 |",
        "|---|---|---|---|",
    ]
    for run in idx["cold_runs"]:
        who = "every core (the gateway)" if run["threads"] > 1 else "one thread (baseline)"
        lines.append(
            f"| cold, encoder on {who} | {run['seconds']:.1f} | {run['tools_per_s']:.0f} "
            f"| {run['loop_lag_p99_ms']:.1f} ms |"
        )
    lines += [f"| warm (every vector cached) | {idx['warm_s']:.1f} | {idx['warm_tools_per_s']:.0f} | - |", ""]
    lines += [
        "| tools | `search_tools` p50 / p99 | index search p50 / p99 | bm25s p50 / p99 |",
        "|---|---|---|---|",
    ]
    for r in data["search"]:
        cells = [
            f"{r[k]['p50_ms']:.1f} / {r[k]['p99_ms']:.1f} ms"
            for k in ("search_tools", "index_search", "bm25s")
        ]
        lines.append(f"| {r['tools']:,} | " + " | ".join(cells) + " |")
    learned = [r for r in data["search"] if (r.get("with_history") or {}).get("p50_ratio")]
    if learned:
        lines += [
            "",
            "| tools | past searches learned (per tool) | `search_tools` p50 / p99 with them "
            "| p50 × without | memory per 100,000 past searches |",
            "|---|---|---|---|---|",
        ]
        for r in learned:
            h = r["with_history"]
            lines.append(
                f"| {r['tools']:,} | {h['examples']:,} ({h['per_tool']}) | {h['p50_ms']:.1f} / "
                f"{h['p99_ms']:.1f} ms | {h['p50_ratio']:.2f} | {h['bytes_per_100k'] / 1e6:.0f} MB |"
            )
    load = ", ".join(f"{x:.1f}" for x in data["load_average"])
    lines += ["", f"{data['cpus']} cores, load average {load} at the end of the run."]
    return "\n".join(lines)


def overhead(data: dict[str, Any]) -> str:
    direct = data["direct"]
    sides = [
        ("direct to the upstream", direct),
        ("floor: bare forwarder, no SDK, no database", data["floor"]),
    ]
    sides.append(("**toolcrib** `execute_tool` (handle)", data["toolcrib"]))
    for mode, side in data["contextforge"].items():
        if mode != "skipped":
            python = f" (Python {side['python']})" if "python" in side else ""
            sides.append((f"ContextForge {side['version']}{python}, {mode}", side))
    lines = [
        "| | p50 | p99 | p50 × direct | calls/s, 16 clients | × direct "
        "| gateway CPU per call, sequential / 16 |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, side in sides:
        s, c = side["sequential"], side["clients_16"]
        cpu = (
            f"{s['gateway_cpu_ms_per_call']:.2f} / {c['gateway_cpu_ms_per_call']:.2f} ms"
            if "gateway_cpu_ms_per_call" in s
            else "-"
        )
        lines.append(
            f"| {name} | {s['p50_ms']:.2f} ms | {s['p99_ms']:.2f} ms "
            f"| {s['p50_ms'] / direct['sequential']['p50_ms']:.2f} | {c['calls_per_s']:.0f} "
            f"| {c['calls_per_s'] / direct['clients_16']['calls_per_s']:.2f} | {cpu} |"
        )
    t, st, io = data["toolcrib"], data["startup"], data["stdio"]
    burst, c16 = t["burst_50x20"], t["clients_16"]
    lines += [
        "",
        f"- 16 clients through toolcrib: {c16['calls']:,} calls, {c16['errors']} errors, "
        f"{c16['audit_rows']:,} audit rows; 64 clients: {t['clients_64']['calls_per_s']:.0f} calls/s "
        f"({t['clients_64']['calls_per_s'] / direct['clients_64']['calls_per_s']:.2f} × direct).",
        f"- 50 clients × 20 calls: {burst['calls']:,} calls, {burst['errors']} errors, "
        f"{burst['audit_rows']:,} audit rows, p50 {burst['p50_ms']:.0f} ms, p99 {burst['p99_ms']:.0f} ms "
        f"(p99 / p50 {burst['p99_ms'] / burst['p50_ms']:.2f}).",
        f"- stdio (`mcp-server-time`) p50: direct {io['direct']['p50_ms']:.2f} ms, toolcrib "
        f"{io['toolcrib']['p50_ms']:.2f} ms ({io['ratio_p50']:.2f} ×).",
        f"- `toolcrib serve` to `/healthz` 200 with two connections: {st['healthz_s']:.2f} s on a restart "
        f"(median of {len(st['healthz_s_runs'])}), {st['first_start_healthz_s']:.2f} s on the first start "
        f"of a new organization; RSS idle {st['rss_idle_mb']:.0f} MB (the model loads at the first "
        f"search), {st['rss_after_first_search_mb']:.0f} MB after it.",
    ]
    for mode, side in data["contextforge"].items():
        if mode == "skipped":
            lines.append(f"- ContextForge: {side}.")
        else:
            tree = (
                f" ({side['processes']} processes, {side['pss_idle_tree_mb']:.0f} MB together, PSS)"
                if side.get("processes", 1) > 1
                else ""
            )
            lines.append(
                f"- ContextForge {side['version']} {mode}: {side['healthz_s']:.1f} s to `/health` on a new "
                f"database, RSS idle {side['rss_idle_mb']:.0f} MB{tree}."
            )
    return "\n".join(lines)


CURVE_COLUMNS = (
    ("MetaTool hit@1", "metatool", "hit@1"),
    ("MetaTool hit@3", "metatool", "hit@3"),
    ("MetaTool answered", "metatool", "positives_non_empty"),
    ("MetaTool no-tool empty (MetaTool catalog)", "metatool_no_tool@metatool", "negatives_empty"),
    ("MetaTool no-tool empty (623 tools)", "metatool_no_tool", "negatives_empty"),
    ("dev hit@1", "intents_dev", "hit@1"),
    ("dev impossible empty", "intents_dev", "negatives_empty"),
    ("LiveMCPBench R@5", "livemcpbench", "r@5"),
    ("leave-servers-out empty", "leave_servers_out", "negatives_empty"),
)


def learning_curve(data: dict[str, Any]) -> str:
    header = "| past searches per tool | " + " | ".join(c[0] for c in CURVE_COLUMNS) + " |"
    lines = [header, "|---|" + "---|" * len(CURVE_COLUMNS)]
    for level, figures in data.items():
        if level == "baseline":
            continue
        cells = [_cell(figures[s][m]) for _, s, m in CURVE_COLUMNS]
        lines.append(f"| {level} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


RENDERERS = {
    "learning-curve": ("learning_curve.json", learning_curve),
    "search-quality": ("search_quality.json", search_quality),
    "search-speed": ("search_speed.json", search_speed),
    "overhead": ("overhead.json", overhead),
}


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
