"""R-5.8 meaning search: the numpy MiniLM and its fusion (skips only without the extra)."""

from __future__ import annotations

import numpy as np
import pytest
from tests.search.conftest import doc

from toolcrib.search import SearchIndex

vectors = pytest.importorskip("toolcrib.search.vectors", exc_type=ImportError)


@pytest.fixture(scope="module")
def model() -> object:
    return vectors.MiniLM.packaged()


def test_r5_8_minilm_matches_the_reference_embedding(model: object) -> None:
    # First values of sentence-transformers' all-MiniLM-L6-v2 for this sentence (measured once).
    vector = model.encode(["A man is eating food."])[0]  # type: ignore[attr-defined]
    assert np.allclose(vector[:4], [0.033242, 0.004406, -0.006277, 0.048379], atol=1e-4)
    assert abs(float(np.linalg.norm(vector)) - 1.0) < 1e-5


def test_r5_8_paraphrases_are_closer_than_unrelated_text(model: object) -> None:
    a, b, c = model.encode(  # type: ignore[attr-defined]
        ["list files in a folder", "get directory listing", "weather forecast for a city"]
    )
    assert float(a @ b) > float(a @ c) + 0.3


def test_r5_8_meaning_lifts_a_paraphrase_and_not_an_unconnected_app() -> None:
    tools = [doc("fs", "ls", "List the entries of a directory")]
    lexical, semantic = SearchIndex(), SearchIndex(semantic=True)
    assert semantic.semantic
    assert not lexical.semantic
    for index in (lexical, semantic):
        index.replace_account("fs", tools)
    assert lexical.search("list the contents of a folder").hits == []  # under the floor on words alone
    hits = semantic.search("list the contents of a folder").hits
    assert [(h.public_name, h.confidence) for h in hits] == [("fs__ls", "low")]
    result = semantic.search("list my Dropbox folder")
    assert result.hits == []
    assert result.not_connected == ["dropbox"]


def test_r5_8_length_bucketed_batches_match_one_text_at_a_time(model: object) -> None:
    texts = [
        "ping",
        "Get current time in a specific timezone",
        "list files in a folder " * 40,  # truncated at 128 tokens
        "Create a new branch in a GitHub repository from an existing commit or the default branch",
        "weather",
    ]
    batched = model.encode(texts)  # type: ignore[attr-defined]
    for text, row in zip(texts, batched, strict=True):
        alone = model.encode([text])[0]  # type: ignore[attr-defined]
        assert float(alone @ row) >= 0.9999


def test_r5_8_meaning_search_runs_without_torch(model: object) -> None:
    import sys

    loaded = {"torch", "sentence_transformers"} & set(sys.modules)
    assert loaded == set()
