"""Render the README and docs tables from the benchmarks' JSON (bench/out/*.json), never by hand.

.venv/bin/python bench/report.py          # rewrite the marked tables in README.md and docs/
.venv/bin/python bench/report.py --check  # exit 1 when a marked table differs from its JSON

A marked table sits between ``<!-- NAME:begin -->`` and ``<!-- NAME:end -->`` in README.md or any
docs/*.md page; RENDERERS names the JSON under bench/out/ each NAME is drawn from and the bench
that writes it. tests/test_docs.py runs the check, so a table that drifts from its figures (edited
by hand, or a JSON re-measured without re-rendering) fails the suite; it also fails when a table of
figures sits outside markers, and when a renderer draws no table.
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
DOCS = (ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")))  # every page a table may sit in

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
    # (header, case of #31: "" as searched, "siblings" with the right tools' history forgotten)
    ("(a) MetaTool hit@1", "", "metatool", "hit@1"),
    ("(a) MetaTool hit@3", "", "metatool", "hit@3"),
    ("(a) MetaTool answered", "", "metatool", "positives_non_empty"),
    ("(b) MetaTool hit@1", "siblings", "metatool", "hit@1"),
    ("(b) MetaTool hit@3", "siblings", "metatool", "hit@3"),
    ("(b) MetaTool answered", "siblings", "metatool", "positives_non_empty"),
    ("(c) MetaTool no-tool empty (MetaTool catalog)", "", "metatool_no_tool@metatool", "negatives_empty"),
    ("(c) MetaTool no-tool empty (623 tools)", "", "metatool_no_tool", "negatives_empty"),
    ("(a) dev hit@1", "", "intents_dev", "hit@1"),
    ("(b) dev hit@1", "siblings", "intents_dev", "hit@1"),
    ("(c) dev impossible empty", "", "intents_dev", "negatives_empty"),
    ("(a) LiveMCPBench R@5", "", "livemcpbench", "r@5"),
    ("(b) LiveMCPBench R@5", "siblings", "livemcpbench", "r@5"),
    ("(c) leave-servers-out empty", "", "leave_servers_out", "negatives_empty"),
)


def learning_curve(data: dict[str, Any]) -> str:
    """bench/fit_gate.py's learning_curve.json: held-out figures per past searches per tool, in the
    three cases of #31 (row 0: nothing learned, so (b) does not arise)."""
    header = "| past searches per tool | " + " | ".join(c[0] for c in CURVE_COLUMNS) + " |"
    lines = [header, "|---|" + "---|" * len(CURVE_COLUMNS)]
    for level, figures in data.items():
        if level == "baseline":
            continue
        cells = []
        for _, case, name, metric in CURVE_COLUMNS:
            source = figures.get(case, {}) if case else figures
            cells.append(_cell(source[name][metric]) if name in source else "-")
        lines.append(f"| {level} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def context(data: dict[str, Any]) -> str:
    """bench/context.py: the R-4.9 fixture against the published design, then real catalogs growing."""
    fx, pub = data["fixture"], data["fixture"]["published"]
    lines = [
        "| R-4.9 fixture | raw bytes | model-facing bytes | cut | ≈ tokens |",
        "|---|---|---|---|---|",
        f"| toolcrib (meta-tools {fx['meta_tools_bytes']:,} "
        f"+ search response {fx['search_response_bytes']:,}) "
        f"| {fx['raw_bytes']:,} | **{fx['surface_bytes']:,}** | {fx['cut_percent']:.2f}% "
        f"| {fx['raw_tokens_estimate']:,} → {fx['surface_tokens_estimate']:,} |",
        f"| published bridge design | {pub['raw_bytes']:,} | {pub['surface_bytes']:,} "
        f"| {pub['cut_percent']:.2f}% "
        f"| {pub['raw_bytes'] // 4:,} → {pub['surface_bytes'] // 4:,} |",
        "",
        "| connections | tools | flat `tools/list` bytes | toolcrib bytes (list + one 3-card search) "
        "| the same with the 3 largest cards | cut |",
        "|---|---|---|---|---|---|",
    ]
    rows = data["catalogs"]
    shown = [r for r in rows if r["connections"] in (1, 5, 10) or r is rows[-1] or r is rows[-2]]
    for r in shown:
        lines.append(
            f"| {r['connections']:,} | {r['tools']:,} | {r['flat_listing_bytes']:,} "
            f"| {r['toolcrib_bytes']:,} "
            f"| {r['toolcrib_worst_bytes']:,} | {r['cut_percent']:.1f}% |"
        )
    return "\n".join(lines)


def replicas(data: dict[str, Any]) -> str:
    """bench/replicas.py: calls through 1 and 3 replicas on PostgreSQL and 1 on SQLite, one run."""
    major = re.search(r"PostgreSQL\)\s*(\d+)", data["postgres"])
    postgres = f"PostgreSQL {major.group(1)}" if major else "PostgreSQL"
    where = f"{data['cores']} cores shared with other work, one run"
    if "load_average" in data:
        where += f" (load average {', '.join(f'{x:.1f}' for x in data['load_average'])} at its end)"
    lines = [
        f"`python bench/replicas.py` ({data['calls']:,} `execute_tool` calls from {data['clients']} clients, "
        f"round robin, after {data['warmup']} warm-up calls; the server started by the run) on {where}:",
        "",
        "| store | replicas | calls/s | p50 ms | p99 ms | audit rows `ok` |",
        "|---|---|---|---|---|---|",
    ]
    for r in data["results"]:
        store = postgres if r["setup"] == "PostgreSQL" else r["setup"]
        expected = r["calls"] + data["warmup"]
        lines.append(
            f"| {store} | {r['replicas']} | {r['calls_per_s']:.0f} | {r['p50_ms']:.0f} | {r['p99_ms']:.0f} "
            f"| {r['audit_ok_rows']:,} of {expected:,} |"
        )
    return "\n".join(lines)


def cli(data: dict[str, Any]) -> str:
    """bench/cli.py: each command's median wall time as a real process, against ``python -c pass``;
    the one-shot command against its baseline, the database layer's imports alone (#33)."""
    lines = [
        f"Median of {data['runs']} runs of each, load average {data['load_average']:.1f}:",
        "",
        "| command | median | × `python -c pass` |",
        "|---|---|---|",
    ]
    baseline, floor = data.get("baseline"), data.get("floor")
    for command, figures in data["commands"].items():
        if command == "python -c pass":
            continue
        shown = f"`{command}`" if command != floor else command
        if command == baseline:
            shown = f'baseline: `python -c "{command}"`'
        lines.append(f"| {shown} | {figures['median_s']:.2f} s | {figures['ratio_to_python']:.0f} |")
    base = data["commands"]["python -c pass"]["median_s"] * 1000
    lines += ["", f"`python -c pass` itself: {base:.1f} ms."]
    for command, figures in data["commands"].items():
        if "ratio_to_baseline" in figures:
            ratio = figures["ratio_to_baseline"]
            verdict = "within" if ratio <= data["target_ratio"] else "over"
            lines += [
                "",
                f"`{command}` takes **{ratio:.2f}×** the baseline ({verdict} the target of "
                f"{data['target_ratio']}×) and {figures['ratio_to_floor']:.2f}× the SQLite floor.",
            ]
    return "\n".join(lines)


def governance(data: dict[str, Any]) -> str:
    """bench/overhead.py --governance: a rate limit with pins, and an OAuth grant, against the baseline."""
    any_store = next(iter(data.values()))
    rounds = len(any_store["rounds"]["baseline"])
    lines = [
        f"{rounds} rounds × {any_store['calls_per_half']:,} sequential calls each way, interleaved:",
        "",
        "| store | baseline p50 | limit + pins | × | OAuth grant | × | the limit's check alone p50 / p90 |",
        "|---|---|---|---|---|---|---|",
    ]
    for store, label in (("sqlite", "SQLite"), ("postgresql", "PostgreSQL")):
        if store not in data:
            continue
        g = data[store]
        check = f"{g['check_alone_p50_us']:.1f} / {g['check_alone_p90_us']:.1f} µs"
        if store == "postgresql":
            check = f"{g['check_alone_p50_us']:.0f} / {g['check_alone_p90_us']:.0f} µs (its one statement)"
        lines.append(
            f"| {label} | {g['p50_ms_baseline']:.2f} ms | {g['p50_ms_limit_and_pins']:.2f} ms "
            f"| {g['ratio_limit_and_pins']:.2f} | {g['p50_ms_oauth']:.2f} ms | {g['ratio_oauth']:.2f} "
            f"| {check} |"
        )
    return "\n".join(lines)


HOT_PATH_PARTS = {
    "bare httpx2 POST": "a bare httpx2 POST of the same `tools/call` (the HTTP client alone)",
    "MCP SDK client": "the MCP SDK's client `call_tool` (what the gateway calls upstream with)",
    "UpstreamSession.call_tool": (
        "toolcrib's `UpstreamSession.call_tool` (the SDK client with bounds and translation)"
    ),
    "authenticate": "`authenticate` (the grant read of every request)",
    "execute_tool": (
        "`execute_tool` (policy, validation, the audit row opened and closed, shaping, and the call)"
    ),
}


def hot_path_parts(data: dict[str, Any]) -> str:
    """bench/hot_path_parts.py: each part of a call alone, in one process, CPU per call."""
    cpu = data["cpu_ms_per_call"]
    lines = [f"{data['calls']:,} calls of each part:", "", "| part | CPU ms per call |", "|---|---|"]
    lines += [f"| {HOT_PATH_PARTS.get(part, part)} | {ms:.2f} |" for part, ms in cpu.items()]
    pipeline = cpu["execute_tool"] - cpu["UpstreamSession.call_tool"]
    sdk = cpu["MCP SDK client"] - cpu["bare httpx2 POST"]
    lines += [
        "",
        f"So the pipeline around the upstream call costs {pipeline:.2f} ms and the SDK's client "
        f"{sdk:.2f} ms over httpx2.",
    ]
    return "\n".join(lines)


def tracing(data: dict[str, Any]) -> str:
    """bench/overhead.py --tracing: the same calls with traces exported and without."""
    rounds = len(data["rounds"]["p50_ms"]["off"])
    lines = [
        f"{rounds} rounds of {data['calls_per_round']:,} calls each way; {data['exporter']}; "
        f"{data['spans_per_call']:.0f} spans per call.",
        "",
        "| traces | p50 | p90 | gateway CPU per call |",
        "|---|---|---|---|",
        f"| off | {data['p50_ms_off']:.2f} ms | {data['p90_ms_off']:.2f} ms "
        f"| {data['gateway_cpu_ms_per_call_off']:.2f} ms |",
        f"| on | {data['p50_ms_on']:.2f} ms | {data['p90_ms_on']:.2f} ms "
        f"| {data['gateway_cpu_ms_per_call_on']:.2f} ms |",
        f"| on / off | {data['ratio_p50']:.2f} × | {data['ratio_p90']:.2f} × "
        f"| {data['ratio_gateway_cpu']:.2f} × |",
    ]
    return "\n".join(lines)


def audit_stream(data: dict[str, Any]) -> str:
    """bench/overhead.py --audit-stream: a webhook sink against none, call by call, same run."""
    got = data["received"]
    write_off, write_on = data["audit_write_p50_us_off"], data["audit_write_p50_us_on"]
    rounds = len(data["rounds"]["off"])
    lines = [
        "| | no sink | a webhook sink | on / off |",
        "|---|---|---|---|",
        f"| `execute_tool` p50 ({rounds} rounds of {data['calls_per_side']:,} calls per side) "
        f"| {data['p50_ms_off']:.2f} ms | {data['p50_ms_on']:.2f} ms | {data['ratio_on']:.3f} × |",
        f"| a call's audit writes alone (open + close, in process), p50 | {write_off:,.0f} µs "
        f"| {write_on:,.0f} µs | {write_on / write_off:.2f} × |",
        "",
        f"Median of on − off over call pairs: {data['paired_delta_ms_median']:+.3f} ms. The receiver got "
        f"{got['events']:,} events in {got['posts']:,} POSTs ({got['distinct_ids']:,} distinct ids, "
        f"{data['audited_on']:,} audited calls), drained {data['drained_after_s']:.2f} s after the last "
        "call.",
    ]
    return "\n".join(lines)


def typo_matching(data: dict[str, Any]) -> str:
    """bench/typo_matching.py: R-5.7's trigram index against rapidfuzz's ratio, the same words."""
    return "\n".join(
        [
            f"| {data['words']:,} words with a letter dropped or doubled, "
            f"vocabulary of {data['vocabulary']:,} "
            "| µs per word |",
            "|---|---|",
            f"| trigram index (R-5.7, shipped) | {data['trigram_index_us_per_word']:.1f} |",
            "| rapidfuzz `process.extract` with `fuzz.ratio` over the whole vocabulary "
            f"| {data['rapidfuzz_ratio_us_per_word']:.1f} |",
            "",
            f"rapidfuzz takes {data['ratio_rapidfuzz_over_trigram']:.2f} × the trigram index's time; "
            "the two agree "
            f"on the best word for {data['same_best_word']:,} of the {data['words']:,} words.",
        ]
    )


RANKER_COLUMNS = (
    ("dev hit@1", "intents_dev", "hit@1"),
    ("dev hit@3", "intents_dev", "hit@3"),
    ("MetaTool hit@1", "metatool", "hit@1"),
    ("MetaTool hit@3", "metatool", "hit@3"),
    ("LiveMCPBench hit@1", "livemcpbench", "hit@1"),
    ("R@5", "livemcpbench", "r@5"),
    ("answered: dev / MetaTool / LiveMCPBench", "", "positives_non_empty"),
)


def ranker(data: dict[str, Any]) -> str:
    """bench/fit_gate.py's gate_cv.json: the list-wise ranker and its gate, held-out, in both modes."""
    header = "| ranker: whole lists (conditional logit), same gate | " + " | ".join(
        c[0] for c in RANKER_COLUMNS
    )
    lines = [header + " |", "|---|" + "---|" * len(RANKER_COLUMNS)]
    for mode, label in (("semantic", "words and meaning (the gateway)"), ("lexical", "words only")):
        figures = data[mode]
        cells = [_cell(figures[s][m]) for _, s, m in RANKER_COLUMNS if s]
        answered = " / ".join(
            _cell(figures[s]["positives_non_empty"]) for s in ("intents_dev", "metatool", "livemcpbench")
        )
        lines.append(f"| {label} | " + " | ".join([*cells, answered]) + " |")
    return "\n".join(lines)


CEILING_COLUMNS = (
    ("first", "first"),
    ("first three", "first_three"),
    ("hit@1", "hit@1"),
    ("hit@3", "hit@3"),
    ("answered", "answered"),
    ("no-tool empty", "no_tool_empty"),
)


def gate_ceiling(data: dict[str, Any]) -> str:
    """bench/gate_ceiling.py: what gates (and a ranker) fitted on MetaTool alone could reach with
    history at #31's bound on the no-tool requests, beside the shipped gate (held out)."""
    title = f"MetaTool, {data['per_tool']} past searches per tool, held out"
    lines = [f"| {title} | " + " | ".join(c[0] for c in CEILING_COLUMNS) + " |"]
    lines.append("|---|" + "---|" * len(CEILING_COLUMNS))
    for name, figures in data["gates"].items():
        lines.append(f"| {name} | " + " | ".join(_cell(figures[key]) for _, key in CEILING_COLUMNS) + " |")
    return "\n".join(lines)


ENCODER_SETS = (
    ("MetaTool", "metatool", ("hit@1", "hit@3")),
    ("LiveMCPBench", "livemcpbench", ("hit@1", "r@5")),
    ("intents_dev", "intents_dev", ("hit@1", "hit@3")),
)


def encoders(data: dict[str, Any]) -> str:
    """bench/encoders.py: cosine alone, the shipped encoder beside all-mpnet-base-v2 on the same texts.

    Time is MetaTool's alone: both encoders read its 199 tools and 1,592 requests from scratch, while
    the later sets share the 623-tool catalog, whose vectors the bench caches for the larger model."""
    names = list(data["metatool"])
    header = "| encoder, cosine alone | " + " | ".join(
        f"{label} {' / '.join(m.replace('r@', 'R@') for m in metrics)}" for label, _, metrics in ENCODER_SETS
    )
    lines = [
        header + " | seconds to encode MetaTool's tools and requests |",
        "|---|" + "---|" * (len(ENCODER_SETS) + 1),
    ]
    seconds = {name: data["metatool"][name]["encode_seconds"] for name in names}
    for name in names:
        cells = [" / ".join(_cell(data[s][name][m]) for m in metrics) for _, s, metrics in ENCODER_SETS]
        lines.append(f"| {name} | " + " | ".join(cells) + f" | {seconds[name]:,.1f} |")
    shipped, other = names[0], names[-1]
    lines += [
        "",
        f"{other} took {seconds[other] / seconds[shipped]:,.0f} × the shipped encoder's time "
        "on the same texts.",
    ]
    return "\n".join(lines)


RENDERERS = {
    "learning-curve": ("learning_curve.json", learning_curve),
    "search-quality": ("search_quality.json", search_quality),
    "search-speed": ("search_speed.json", search_speed),
    "overhead": ("overhead.json", overhead),
    "context": ("context.json", context),
    "replicas": ("replicas.json", replicas),
    "cli": ("cli.json", cli),
    "governance": ("governance.json", governance),
    "hot-path-parts": ("hot_path_parts.json", hot_path_parts),
    "tracing": ("tracing.json", tracing),
    "audit-stream": ("audit_stream.json", audit_stream),
    "typo-matching": ("typo_matching.json", typo_matching),
    "ranker": ("gate_cv.json", ranker),
    "encoders": ("encoders.json", encoders),
    "gate-ceiling": ("gate_ceiling.json", gate_ceiling),
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
