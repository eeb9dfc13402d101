"""The catalog encoder: every core, the lowest CPU priority, the same vectors (R-5.8, #9)."""

from __future__ import annotations

import sys
import threading
from pathlib import Path

import numpy as np
import pytest

from toolcrib.gateway.discovery.meaning import LiveIndex, Meaning
from toolcrib.search.semantic import load_encoder

TEXTS = [
    "create issue: Open a new issue in a GitHub repository",
    "get current time: Current time in a given IANA timezone",
    "send message: Post a message to a Slack channel " + "with a long description " * 40,
    "list files: List the files of a folder",
    "query: Run a read-only SQL query against the database",
]


@pytest.fixture(scope="module")
def meaning() -> Meaning:
    encoder, reason = load_encoder()
    assert encoder is not None, reason
    return Meaning(encoder)


def _nice(native_id: int) -> int:
    fields = Path(f"/proc/self/task/{native_id}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[16])  # field 19 of stat(5); the two before ")" are pid and comm


def test_r5_8_a_catalog_encoded_on_several_threads_gets_the_vectors_of_one(meaning: Meaning) -> None:
    texts = [f"{text} ({n})" for n in range(10) for text in TEXTS]  # 50 texts: several chunks
    index = LiveIndex(meaning, encoder_threads=3)
    try:
        alone = LiveIndex(meaning, encoder_threads=1)._index.encode(texts)
        shared = index._encode_catalog(texts)
        np.testing.assert_array_equal(shared, alone)
        assert index._pool is not None
    finally:
        index.close()
    assert index._pool is None


@pytest.mark.skipif(sys.platform != "linux", reason="the nice value is per thread on Linux only")
def test_r5_8_the_catalog_encoder_runs_at_the_lowest_priority_and_a_query_does_not(meaning: Meaning) -> None:
    here = threading.get_native_id()  # a search encodes its query on a thread like this one
    before = _nice(here)
    index = LiveIndex(meaning, encoder_threads=2)
    try:
        encoder_thread = index._pool_of().submit(threading.get_native_id).result()
        assert _nice(encoder_thread) == 19
        assert _nice(here) == before
    finally:
        index.close()
