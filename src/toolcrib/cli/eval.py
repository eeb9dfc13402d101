"""``toolcrib eval search``: run an evaluation set through the real search engine."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from toolcrib.cli.common import DatabaseOption

if TYPE_CHECKING:  # the search engine and the evaluation are imported by the command that runs them (#13)
    from rich.table import Table

    from toolcrib.eval.metrics import Ranking

__all__ = ["eval_app"]

eval_app = typer.Typer(help="Measure toolcrib against evaluation sets.", no_args_is_help=True)


def _read_jsonl(path: Path) -> list[dict[str, Any]]:
    with path.open(encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def _write_rankings(path: Path, rankings: list[Ranking]) -> None:
    with path.open("w", encoding="utf-8") as handle:
        for ranking in rankings:
            handle.write(
                json.dumps({"qid": ranking.qid, "ranked": ranking.ranked}, ensure_ascii=False) + "\n"
            )


def _table(figures: dict[str, float | int | None], title: str) -> Table:
    from rich.table import Table  # rich with the command's own table (#33)

    table = Table(title=title)
    table.add_column("metric")
    table.add_column("value", justify="right")
    for name, value in figures.items():
        shown = "-" if value is None else (f"{value:.3f}" if isinstance(value, float) else str(value))
        table.add_row(name, shown)
    return table


@eval_app.command("search")
def search(
    catalog: Path = typer.Option(..., exists=True, dir_okay=False, help="Catalog snapshot (JSON lines)."),
    queries: Path = typer.Option(..., exists=True, dir_okay=False, help="Queries (JSON lines)."),
    output: Path | None = typer.Option(None, help="Write one JSON line per query: qid, ranked."),
    lexical: bool = typer.Option(False, "--lexical", help="Words only: leave the meaning channel out."),
    history: Path | None = typer.Option(
        None,
        exists=True,
        dir_okay=False,
        help="A queries file replayed first as the organization's past use (R-5.12): each positive "
        "as a past search whose first gold tool then ran.",
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the figures as JSON."),
    database: str | None = DatabaseOption,
) -> None:
    """Rank every query with default settings and print hit@k, MRR, empty rates and R@5.

    The catalog comes from ``--catalog``: ``--database`` is accepted like everywhere, and unused."""
    from toolcrib.eval.data import catalog_docs
    from toolcrib.eval.metrics import metrics
    from toolcrib.eval.replay import rank_queries, replay_history
    from toolcrib.search import SearchIndex
    from toolcrib.search.semantic import load_encoder

    del database
    accounts = catalog_docs(_read_jsonl(catalog))
    index = SearchIndex(encoder=None if lexical else load_encoder()[0])
    for account, docs in accounts.items():
        index.replace_account(account, docs)
    learned = replay_history(index, _read_jsonl(history)) if history is not None else 0
    rankings = rank_queries(index, accounts, _read_jsonl(queries))
    if output is not None:
        _write_rankings(output, rankings)
    figures: dict[str, Any] = {**metrics(rankings), "semantic": index.semantic, "history": learned}
    if as_json:
        typer.echo(json.dumps(figures))
    else:
        mode = "lexical + meaning" if index.semantic else "lexical"
        from rich.console import Console

        Console().print(_table(figures, f"{queries.name} ({mode})"))
