"""The public evaluation data: its sets, their rows, and the catalogs as search documents.

Every public evaluation set in shared/data/retrieval, each on its own catalog: intents_dev (short
intents and unconnected-app queries, 623-tool catalog), MetaTool requests (199-tool catalog),
MetaTool no-tool requests, LiveMCPBench tasks and their leave-servers-out twins (623-tool catalog).

A query row has ``qid``, ``query`` and ``gold`` (public names, any of which is right); a
LiveMCPBench row adds ``gold_groups`` (one list per needed tool, ids in ``server/tool`` form),
a leave-servers-out row ``exclude_servers`` (accounts removed from the catalog for that query).
A row with no gold is a negative: nothing should come back.
"""

from __future__ import annotations

import hashlib
import json
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from toolcrib.search.documents import SearchDoc

__all__ = ["SETS", "EvalSet", "catalog_docs", "fold_of", "gold_of", "public_id", "ran_of", "read_jsonl"]


@dataclass(frozen=True)
class EvalSet:
    name: str
    path: str
    catalog: str  # "main" or "metatool"
    kind: str  # "short", "long", "none"
    fit: bool = True  # False: reported only (the same requests as another set, on another catalog)
    learned: bool = True  # fitted on with simulated history (R-5.12, ``history.training_examples``)


SETS = (
    EvalSet("intents_dev", "intents_dev.jsonl", "main", "short"),
    EvalSet("metatool", "metatool/queries_dev.jsonl", "metatool", "long"),
    EvalSet("metatool_no_tool", "negatives/metatool_no_tool.jsonl", "main", "none"),
    # Fitted on only with history (case c of #31: no-tool requests with every MetaTool tool
    # learned); without history the same requests are fitted on, on the other catalog.
    EvalSet("metatool_no_tool@metatool", "negatives/metatool_no_tool.jsonl", "metatool", "none", fit=False),
    EvalSet("livemcpbench", "livemcpbench/queries.jsonl", "main", "long"),
    EvalSet("leave_servers_out", "negatives/livemcpbench_leave_servers_out.jsonl", "main", "none"),
)


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    with path.open(encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def public_id(gold_id: str) -> str:
    """LiveMCPBench ``server/tool`` -> catalog ``server__tool`` (public names pass unchanged)."""
    return gold_id.replace("/", "__", 1) if "__" not in gold_id else gold_id


def catalog_docs(rows: Iterable[Mapping[str, Any]]) -> dict[str, list[SearchDoc]]:
    """Catalog snapshot rows grouped into SearchDocs per account."""
    accounts: dict[str, list[SearchDoc]] = defaultdict(list)
    for row in rows:
        doc = SearchDoc(
            row["id"], row["account"], row["connector"], row["name"], row.get("description") or ""
        )
        accounts[doc.account].append(doc)
    return dict(accounts)


def fold_of(row: Mapping[str, Any], folds: int) -> int:
    """The row's cross-validation fold, by a hash of its id (a negative twin ``-neg`` sits with
    its request)."""
    return int(hashlib.sha256(row["qid"].removesuffix("-neg").encode()).hexdigest(), 16) % folds


def gold_of(row: Mapping[str, Any]) -> set[str]:
    """Every tool that is right for the row (any group's member counts)."""
    names = {public_id(g) for g in row.get("gold") or ()}
    for group in row.get("gold_groups") or ():
        names |= {public_id(g) for g in group}
    return names


def ran_of(row: Mapping[str, Any]) -> str | None:
    """The tool a replay of ``row`` as a past search ran: its first gold tool."""
    gold = row.get("gold") or [g for group in row.get("gold_groups") or () for g in group]
    return public_id(gold[0]) if gold else None
