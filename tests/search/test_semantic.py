"""R-5.8 meaning search: the packaged int8 MiniLM on onnxruntime, its checks, and its use in ranking."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import numpy as np
import pytest
from tests.search.conftest import doc

from toolcrib.search import SearchIndex
from toolcrib.search.semantic import load_encoder
from toolcrib.search.vectors import _TOKENIZER, EncoderUnavailable, MiniLM, _model_path


@pytest.fixture(scope="module")
def model() -> MiniLM:
    return MiniLM.packaged()


def test_r5_8_the_default_install_loads_the_packaged_model() -> None:
    encoder, reason = load_encoder()
    assert encoder is not None, reason
    assert SearchIndex(encoder=encoder).semantic


def test_r5_8_int8_model_stays_close_to_the_float_reference(model: MiniLM) -> None:
    # First values of sentence-transformers' float all-MiniLM-L6-v2 for this sentence (measured
    # once). The int8 weights moved them by up to 5e-3; multiplying in int8 as well (the
    # activations quantized too, search/int8.py) moves them by up to 8e-3 (#9). What this guards,
    # search quality, is held by the cross-validated gate (test_quality_gate.py), measured again.
    vector = model.encode(["A man is eating food."])[0]
    assert np.allclose(vector[:4], [0.033242, 0.004406, -0.006277, 0.048379], atol=1e-2)
    assert abs(float(np.linalg.norm(vector)) - 1.0) < 1e-5


def test_r5_8_paraphrases_are_closer_than_unrelated_text(model: MiniLM) -> None:
    a, b, c = model.encode(["list files in a folder", "get directory listing", "weather forecast for a city"])
    assert float(a @ b) > float(a @ c) + 0.3


def test_r5_8_a_model_file_that_does_not_match_its_digest_is_refused(tmp_path: Path) -> None:
    tampered = tmp_path / "model.onnx"
    shutil.copy(_model_path(), tampered)
    with tampered.open("r+b") as handle:
        handle.seek(-1, 2)
        last = handle.read(1)
        handle.seek(-1, 2)
        handle.write(bytes([last[0] ^ 0xFF]))
    with pytest.raises(EncoderUnavailable):
        MiniLM(tampered, _TOKENIZER)
    with pytest.raises(EncoderUnavailable):
        MiniLM(tmp_path / "absent.onnx", _TOKENIZER)


def test_r5_8_the_model_loads_at_first_use_and_is_checked_again_then(tmp_path: Path) -> None:
    """Construction checks the digests without loading the model (#12: idle memory); the bytes
    loaded at the first ``encode`` are checked again, so a file swapped in between is refused."""
    copy = tmp_path / "model.onnx"
    shutil.copy(_model_path(), copy)
    good = MiniLM(copy, _TOKENIZER)
    assert not good.loaded
    assert good.encode(["add two numbers"]).shape == (1, 384)
    assert good.loaded
    swapped = MiniLM(copy, _TOKENIZER)
    data = copy.read_bytes()
    copy.write_bytes(data[:-1] + bytes([data[-1] ^ 0xFF]))
    with pytest.raises(EncoderUnavailable):
        swapped.encode(["add two numbers"])
    assert not swapped.loaded


def test_r5_8_meaning_finds_a_paraphrase_words_alone_miss() -> None:
    tools = [
        doc("fs", "ls", "List the entries of a directory"),
        doc("mail", "send_email", "Send an email message to a recipient"),
        doc("w", "get_forecast", "Weather forecast for a city"),
    ]
    index = SearchIndex(encoder=MiniLM.packaged())
    for account in ("fs", "mail", "w"):
        index.replace_account(account, [d for d in tools if d.account == account])
    hits = index.search("show me what is inside this folder").hits
    assert hits
    assert hits[0].public_name == "fs__ls"
    result = index.search("list my Dropbox folder")
    assert result.hits == []
    assert result.not_connected == ["dropbox"]


def test_r5_8_a_text_encoded_with_others_gets_the_vector_it_gets_alone(model: MiniLM) -> None:
    texts = [
        "ping",
        "Get current time in a specific timezone",
        "list files in a folder " * 80,  # truncated at 256 tokens
        "Create a new branch in a GitHub repository from an existing commit or the default branch",
        "weather",
    ]
    batched = model.encode(texts)
    for text, row in zip(texts, batched, strict=True):
        alone = model.encode([text])[0]
        assert float(alone @ row) >= 0.9999


def test_r5_8_meaning_search_runs_without_torch(model: MiniLM) -> None:
    loaded = {"torch", "sentence_transformers"} & set(sys.modules)
    assert loaded == set()
