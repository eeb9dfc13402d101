"""Value words (R-5.3) are found in time linear in the query's length (#10 finding 1: a
40,000-character one-word query took 27 s, the patterns retrying each failed match from every
later position of the word)."""

from __future__ import annotations

import time

import pytest

from toolcrib.search.values import value_words


def _best_cpu_seconds(text: str, runs: int = 3) -> float:
    best = float("inf")
    for _ in range(runs):
        started = time.process_time()
        value_words(text)
        best = min(best, time.process_time() - started)
    return max(best, 1e-6)


@pytest.mark.parametrize("unit", ["a.", "a-", "x@", "ab/", "a"])
def test_r5_3_value_words_take_linear_time_on_hostile_words(unit: str) -> None:
    small = unit * (4_000 // len(unit))
    large = unit * (40_000 // len(unit))
    ratio = _best_cpu_seconds(large) / _best_cpu_seconds(small)
    assert ratio < 30, ratio  # linear: ~10; the old patterns: ~100 (quadratic)


def test_r5_3_value_words_still_recognize_values() -> None:
    found = value_words('convert 3pm New York time, mail bob@example.com the "Q3 report" from /tmp/x.pdf')
    assert {"3pm", "new", "york", "bob", "q3", "report", "tmp", "pdf"} <= found
