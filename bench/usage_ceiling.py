"""How far a tool's past searches alone can carry the first place on MetaTool (#31), held out.

.venv/bin/python bench/usage_ceiling.py [--folds 5] [--per-tool 8]

An exploration for the next design of the usage channel, not a model that ships: the meaning
channel only (the packaged encoder; no lexical channel, no gate), MetaTool's dev requests in
``--folds`` folds, each fold's requests ranked with ``--per-tool`` past searches per tool drawn from
the other folds. Per tool: ``cos`` its description's cosine to the request, ``nn`` the cosine of
its nearest past search. Rankings compared, hit@1 and hit@3:

- ``cold``: ``cos``;
- ``sum``: ``cos + nn`` (a tool without history adds 0);
- ``sum, unlearned imputed pNN``: ``cos + nn``, where a tool without history gets ``cos`` plus the
  NN-th percentile of ``nn - cos`` over the learned tools among the request's 20 best by ``cos``
  (the lift a learned tool typically shows for this request), so a learned tool wins only by a
  lift above that;
- ``centroid`` and ``nearest``: ``cen``, the cosine to the unit mean of the tool's past searches
  (where they point together), and ``nn`` alone; ``cos + cen`` and ``cos + nn + cen`` (a tool
  without history adds nothing: -1 for ``cen`` and ``nn`` alone).

Each for (a) every tool has its history and (b) the right tool's history forgotten with about
half of the other tools' (``eval.history.sibling_case``, as the fitting and ``bench/fit_gate.py``
do: were every other tool to keep its own, the one tool without history would be the right one,
and ranking the unlearned by imputation would be rewarded for that). Requests that need no tool
are the gate's matter and are not measured here. Prints a table; writes bench/out/usage_ceiling.json.
"""

from __future__ import annotations

import argparse
import collections
import json
import random
from pathlib import Path
from typing import Any

import numpy as np

from toolcrib.eval.history import sibling_case
from toolcrib.search.semantic import load_encoder

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data" / "retrieval" / "metatool"
OUT = ROOT / "bench" / "out" / "usage_ceiling.json"
PERCENTILES = (50, 75, 90)
TOP = 20


def _unit(m: Any) -> Any:
    return m / np.linalg.norm(m, axis=1, keepdims=True)


def _imputed(cos: Any, nn: Any, learned: Any, pct: int) -> Any:
    top = np.argsort(-cos)[:TOP]
    lifts = [nn[t] - cos[t] for t in top if learned[t]]
    lift = float(np.percentile(lifts, pct)) if lifts else 0.0
    return cos + np.where(learned, nn, cos + lift)


def _rankings(cos: Any, nn: Any, cen: Any, learned: Any) -> dict[str, Any]:
    found = {"cold": cos, "sum": cos + np.where(learned, nn, 0.0)}
    for pct in PERCENTILES:
        found[f"sum, unlearned imputed p{pct}"] = _imputed(cos, nn, learned, pct)
    found["nearest"] = np.where(learned, nn, -1.0)
    found["centroid"] = np.where(learned, cen, -1.0)
    found["cos + cen"] = cos + np.where(learned, cen, 0.0)
    found["cos + nn + cen"] = cos + np.where(learned, nn + cen, 0.0)
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--per-tool", type=int, default=8)
    args = parser.parse_args()
    encoder, why = load_encoder()
    if encoder is None:
        raise SystemExit(f"no encoder: {why}")
    catalog = [json.loads(line) for line in (DATA / "catalog.jsonl").open()]
    queries = [json.loads(line) for line in (DATA / "queries_dev.jsonl").open()]
    queries = [q for q in queries if q["kind"] == "positive" and q["gold"]]
    index = {c["id"]: i for i, c in enumerate(catalog)}
    ids = [c["id"] for c in catalog]
    tools = _unit(encoder.encode([f"{c['name']}: {c['description']}" for c in catalog]))
    asked = _unit(encoder.encode([q["query"] for q in queries]))
    gold = [index[q["gold"][0]] for q in queries]
    folds = [i % args.folds for i in range(len(queries))]
    random.Random(7).shuffle(folds)
    hits: collections.Counter[tuple[str, str, int]] = collections.Counter()
    for fold in range(args.folds):
        by_tool: dict[int, list[int]] = collections.defaultdict(list)
        for i, f in enumerate(folds):
            if f != fold:
                by_tool[gold[i]].append(i)
        past: list[int] = []
        labels: list[int] = []
        for tool, asked_of in by_tool.items():
            drawn = asked_of[:]
            random.Random(tool).shuffle(drawn)
            past += drawn[: args.per_tool]
            labels += [tool] * len(drawn[: args.per_tool])
        history, owner = asked[past], np.array(labels)
        learned = np.zeros(len(catalog), bool)
        learned[np.unique(owner)] = True
        centres = np.zeros_like(tools)
        np.add.at(centres, owner, history)
        centres = centres / np.maximum(np.linalg.norm(centres, axis=1, keepdims=True), 1e-12)
        for i in (i for i, f in enumerate(folds) if f == fold):
            cos = tools @ asked[i]
            nn = np.full(len(catalog), -1.0)
            np.maximum.at(nn, owner, history @ asked[i])
            cen = centres @ asked[i]
            siblings = learned.copy()
            forgotten = sibling_case(
                queries[i]["qid"], [ids[gold[i]]], [ids[t] for t in np.flatnonzero(learned)]
            )
            siblings[[index[name] for name in forgotten]] = False
            for case, known in (("a", learned), ("b", siblings)):
                for name, score in _rankings(cos, nn, cen, known).items():
                    order = np.argsort(-score)
                    hits[(case, name, 1)] += int(order[0] == gold[i])
                    hits[(case, name, 3)] += int(gold[i] in order[:3])
    n = len(queries)
    names = list(_rankings(np.zeros(1), np.zeros(1), np.zeros(1), np.ones(1, bool)))
    rows = [
        {
            "ranking": name,
            **{f"{case} hit@{k}": round(hits[(case, name, k)] / n, 3) for case in ("a", "b") for k in (1, 3)},
        }
        for name in names
    ]
    print(f"MetaTool dev, {n} requests, {args.folds} folds, {args.per_tool} past searches per tool")
    print("| ranking | (a) hit@1 | (a) hit@3 | (b) hit@1 | (b) hit@3 |")
    print("|---|---|---|---|---|")
    for row in rows:
        cells = " | ".join(f"{row[f'{c} hit@{k}']:.3f}" for c in ("a", "b") for k in (1, 3))
        print(f"| {row['ranking']} | {cells} |")
    OUT.write_text(
        json.dumps({"requests": n, "folds": args.folds, "per_tool": args.per_tool, "rows": rows}, indent=1)
    )
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
