"""Context bytes: what the model reads about tools, flat listing vs toolcrib (SPEC R-4.9, R-14.1).

(a) The regression fixture of R-4.9 against the published 217,316 -> 5,062 bytes.
(b) The 14 real catalogs of shared/data/catalogs: a flat ``tools/list`` of every connected tool
    against toolcrib's ``tools/list`` (the two meta-tools) plus one search response of 3 cards,
    as connections grow 1 -> 14, then 140 (the same servers under more account names).

Both sides are computed in the same run with the real catalog code. Tokens are an estimate:
bytes / 4. Run: ``.venv/bin/python bench/context.py``; writes bench/out/context.{json,png}.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "src")]

from tests.fixtures.giant_tool import giant_tool_definition  # noqa: E402

from toolcrib.catalog import build_card, fit_search_response, json_size, normalize_catalog  # noqa: E402
from toolcrib.gateway.discovery.surface import meta_tool_definitions  # noqa: E402

PUBLISHED = {"raw_bytes": 217_316, "surface_bytes": 5_062}
CONNECTION_STEPS = [*range(1, 15), 140]
OUT = ROOT / "bench" / "out"


def shared_dir() -> Path:
    default = Path(__file__).resolve().parents[2] / "shared"
    return default if default.is_dir() else Path(os.environ.get("TOOLCRIB_SHARED", default))


def search_response(cards: list[dict[str, Any]]) -> dict[str, Any]:
    handles = [{**c, "action_id": f"act_{i:026d}", "confidence": "high"} for i, c in enumerate(cards)]
    return fit_search_response(handles, restricted=[])


def fixture_figures() -> dict[str, Any]:
    definition = giant_tool_definition()
    [record] = normalize_catalog("crm", "CRM", [definition])
    meta = json_size(meta_tool_definitions("search"))
    response = json_size(search_response([build_card(record, risk="write")]))
    raw = json_size(definition)
    surface = meta + response
    return {
        "raw_bytes": raw,
        "meta_tools_bytes": meta,
        "search_response_bytes": response,
        "surface_bytes": surface,
        "cut_percent": round(100 * (1 - surface / raw), 2),
        "raw_tokens_estimate": raw // 4,
        "surface_tokens_estimate": surface // 4,
        "published": {**PUBLISHED, "cut_percent": round(100 * (1 - 5_062 / 217_316), 2)},
    }


def growth_figures(catalogs: dict[str, list[dict[str, Any]]]) -> list[dict[str, Any]]:
    servers = sorted(catalogs)
    meta = json_size(meta_tool_definitions("search"))
    rows = []
    for n in CONNECTION_STEPS:
        accounts = [
            (f"{servers[i % len(servers)]}-{i // len(servers) + 1}", servers[i % len(servers)])
            for i in range(n)
        ]
        listing: list[dict[str, Any]] = []
        cards: list[dict[str, Any]] = []
        for account, server in accounts:
            listing += [{**tool, "name": f"{account}__{tool['name']}"} for tool in catalogs[server]]
            cards += [
                build_card(r, risk="read") for r in normalize_catalog(account, server, catalogs[server])
            ]
        by_size = sorted(cards, key=json_size)
        middle = len(by_size) // 2
        typical = json_size(search_response(by_size[max(middle - 1, 0) : middle + 2]))
        worst = json_size(search_response(by_size[-3:]))
        flat = json_size({"tools": listing})
        rows.append(
            {
                "connections": n,
                "tools": len(listing),
                "flat_listing_bytes": flat,
                "toolcrib_bytes": meta + typical,
                "toolcrib_worst_bytes": meta + worst,
                "cut_percent": round(100 * (1 - (meta + typical) / flat), 1),
                "flat_tokens_estimate": flat // 4,
                "toolcrib_tokens_estimate": (meta + typical) // 4,
            }
        )
    return rows


def print_tables(fixture: dict[str, Any], rows: list[dict[str, Any]]) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console(width=130)
    table = Table(title="R-4.9 fixture: one 300-parameter tool (tokens = bytes/4, an estimate)")
    for column in ("", "raw bytes", "surface bytes", "cut", "≈ tokens raw → surface"):
        table.add_column(column, justify="right")
    published = fixture["published"]
    ours = (fixture["raw_bytes"], fixture["surface_bytes"], fixture["cut_percent"])
    theirs = (published["raw_bytes"], published["surface_bytes"], published["cut_percent"])
    for label, (raw, surface, cut) in (("toolcrib", ours), ("published bridge", theirs)):
        table.add_row(label, f"{raw:,}", f"{surface:,}", f"{cut}%", f"{raw // 4:,} → {surface // 4:,}")
    console.print(table)
    growth = Table(title="Real catalogs: flat tools/list vs toolcrib (meta-tools + one 3-card search)")
    for column in (
        "connections",
        "tools",
        "flat bytes",
        "toolcrib bytes",
        "worst 3 cards",
        "cut",
        "≈ tokens",
    ):
        growth.add_column(column, justify="right")
    for row in rows:
        growth.add_row(
            str(row["connections"]), str(row["tools"]), f"{row['flat_listing_bytes']:,}",
            f"{row['toolcrib_bytes']:,}", f"{row['toolcrib_worst_bytes']:,}", f"{row['cut_percent']}%",
            f"{row['flat_tokens_estimate']:,} → {row['toolcrib_tokens_estimate']:,}",
        )  # fmt: skip
    console.print(growth)


def draw_chart(rows: list[dict[str, Any]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels = [str(r["connections"]) for r in rows]
    fig, ax = plt.subplots(figsize=(9, 4.5))
    ax.plot(labels, [r["flat_listing_bytes"] for r in rows], marker="o", label="flat tools/list")
    ax.plot(labels, [r["toolcrib_bytes"] for r in rows], marker="o", label="toolcrib (meta-tools + 3 cards)")
    ax.plot(
        labels, [r["toolcrib_worst_bytes"] for r in rows], linestyle="--", label="toolcrib, 3 largest cards"
    )
    ax.set_yscale("log")
    ax.set_xlabel("connections (14 real servers; 140 = the same under 10 account names each)")
    ax.set_ylabel("bytes the model reads about tools")
    ax.set_title("Tool context: flat listing vs toolcrib")
    ax.legend()
    ax.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main() -> None:
    catalogs = {
        p.stem: json.loads(p.read_text()) for p in sorted((shared_dir() / "data" / "catalogs").glob("*.json"))
    }
    fixture = fixture_figures()
    rows = growth_figures(catalogs) if catalogs else []
    OUT.mkdir(parents=True, exist_ok=True)
    result = {
        "note": "bytes are compact UTF-8 JSON; tokens are an estimate (bytes / 4)",
        "fixture": fixture,
        "median_toolcrib_bytes": statistics.median(r["toolcrib_bytes"] for r in rows) if rows else None,
        "catalogs": rows,
    }
    (OUT / "context.json").write_text(json.dumps(result, indent=2) + "\n")
    print_tables(fixture, rows)
    if rows:
        draw_chart(rows, OUT / "context.png")
    print(f"wrote {OUT / 'context.json'} and {OUT / 'context.png'}")


if __name__ == "__main__":
    main()
