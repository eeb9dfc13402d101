"""Typo matching (SPEC R-5.7): the trigram index of ``search/typos.py`` against rapidfuzz, same run.

.venv/bin/python bench/typo_matching.py [--words 300]

The vocabulary is every word of the 623-tool catalog that typo matching considers (ASCII letters,
4 or more); each query word is one of them with a letter dropped or doubled. Measured per word:
the trigram index (R-5.7's Jaccard similarity of padded trigrams, looking up only the words that
share a trigram) and ``rapidfuzz.process.extract`` with ``fuzz.ratio`` (an edit-distance ratio over
the whole vocabulary; score cutoff 80), and how often both name the same best word. Prints a
table and writes bench/out/typo_matching.json. This is what decided #25's question whether
rapidfuzz should do R-5.7's matching: it measures a different similarity, and is not faster.
"""

from __future__ import annotations

import argparse
import json
import random
import time

from rapidfuzz import fuzz, process
from rich.console import Console
from rich.table import Table

from _catalog import DATA, OUT, read_jsonl
from toolcrib.search.tokenize import words
from toolcrib.search.typos import MIN_TYPO_LENGTH, TrigramVocabulary


def _vocabulary() -> list[str]:
    found: set[str] = set()
    for row in read_jsonl(DATA / "catalog.jsonl"):
        found |= set(words(f"{row['name']} {row.get('description') or ''}", stemming=True))
    return sorted(w for w in found if len(w) >= MIN_TYPO_LENGTH and w.isascii() and w.isalpha())


def _mistyped(word: str, rng: random.Random) -> str:
    i = rng.randrange(len(word))
    return word[:i] + word[i + 1 :] if rng.random() < 0.5 else word[:i] + word[i] + word[i:]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--words", type=int, default=300)
    args = parser.parse_args()
    vocabulary = _vocabulary()
    index = TrigramVocabulary()
    for word in vocabulary:
        index.add(word)
    rng = random.Random(25)
    queries = [_mistyped(rng.choice(vocabulary), rng) for _ in range(args.words)]

    start = time.perf_counter()
    trigram = [index.similar(q, 0.5)[:1] for q in queries]
    trigram_us = (time.perf_counter() - start) / len(queries) * 1e6
    start = time.perf_counter()
    ratio = [process.extract(q, vocabulary, scorer=fuzz.ratio, score_cutoff=80, limit=1) for q in queries]
    rapidfuzz_us = (time.perf_counter() - start) / len(queries) * 1e6
    same = sum(1 for t, r in zip(trigram, ratio, strict=True) if t and r and t[0][0] == r[0][0])
    report = {
        "vocabulary": len(vocabulary),
        "words": len(queries),
        "trigram_index_us_per_word": round(trigram_us, 1),
        "rapidfuzz_ratio_us_per_word": round(rapidfuzz_us, 1),
        "ratio_rapidfuzz_over_trigram": round(rapidfuzz_us / trigram_us, 2),
        "same_best_word": same,
    }
    table = Table(title=f"typo matching, {len(vocabulary):,} words, {len(queries)} mistyped (R-5.7)")
    for column in ("matcher", "µs per word", "× trigram index"):
        table.add_column(column, justify="right")
    table.add_row("trigram index (search/typos.py)", f"{trigram_us:.0f}", "1.00")
    table.add_row(
        "rapidfuzz.process.extract, fuzz.ratio", f"{rapidfuzz_us:.0f}", f"{rapidfuzz_us / trigram_us:.2f}"
    )
    Console().print(table)
    print(f"same best word: {same} of {len(queries)}")
    OUT.mkdir(exist_ok=True)
    (OUT / "typo_matching.json").write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()
