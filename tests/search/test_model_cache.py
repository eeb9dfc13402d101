"""The int8-rewritten model is made once and cached by digest, so a normal start does not import
onnx (#25): each load runs in its own process, so ``sys.modules`` tells what that load imported."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from toolcrib.search.int8 import REWRITE_VERSION
from toolcrib.search.model_cache import cached
from toolcrib.search.vectors import MODEL_SHA256, REWRITTEN_SHA256, _checked_bytes, _model_path

LOAD = """
import json, sys
from toolcrib.search.semantic import load_encoder
encoder, reason = load_encoder()
assert encoder is not None, reason
vectors = encoder.encode(["list files in a folder", "weather forecast for Bergen tomorrow"])
print(json.dumps({"onnx": "onnx" in sys.modules, "vectors": vectors.tolist()}))
"""


def _load(cache_home: Path) -> dict[str, Any]:
    """The packaged encoder loaded and used in a new process whose cache folder is ``cache_home``."""
    env = {**os.environ, "XDG_CACHE_HOME": str(cache_home)}
    done = subprocess.run(
        [sys.executable, "-c", LOAD], env=env, capture_output=True, text=True, timeout=90, check=False
    )
    assert done.returncode == 0, done.stderr
    loaded: dict[str, Any] = json.loads(done.stdout)
    return loaded


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture(scope="module")
def first(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    home = tmp_path_factory.mktemp("cache")
    return home, _load(home)


def _cache_file(home: Path) -> Path:
    return home / "toolcrib" / f"minilm-{MODEL_SHA256[:16]}-int8-v{REWRITE_VERSION}.onnx"


def test_r5_8_the_first_load_rewrites_the_model_and_caches_it(first: tuple[Path, dict[str, Any]]) -> None:
    home, loaded = first
    assert loaded["onnx"]  # the rewrite needs onnx, once
    assert _digest(_cache_file(home)) == REWRITTEN_SHA256
    assert [p.name for p in (home / "toolcrib").iterdir()] == [_cache_file(home).name]  # no temporary left


def test_r5_8_a_later_load_reads_the_cache_without_onnx_and_gets_the_same_vectors(
    first: tuple[Path, dict[str, Any]],
) -> None:
    home, loaded = first
    again = _load(home)
    assert not again["onnx"]
    assert again["vectors"] == loaded["vectors"]


def test_r5_8_a_foreign_cache_file_is_rebuilt_never_loaded(
    first: tuple[Path, dict[str, Any]], tmp_path: Path
) -> None:
    # A valid model, loadable and wrong: the packaged one, not rewritten (its vectors differ).
    _, loaded = first
    _cache_file(tmp_path).parent.mkdir(parents=True)
    _cache_file(tmp_path).write_bytes(_checked_bytes(_model_path(), MODEL_SHA256))
    rebuilt = _load(tmp_path)
    assert rebuilt["onnx"]
    assert rebuilt["vectors"] == loaded["vectors"]
    assert _digest(_cache_file(tmp_path)) == REWRITTEN_SHA256


def _pin(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def test_a_corrupt_file_is_rebuilt_and_replaced(tmp_path: Path) -> None:
    path = tmp_path / "model.onnx"
    path.write_bytes(b"right bytes, cut sho")
    assert cached(path, _pin(b"right bytes"), lambda: b"right bytes") == b"right bytes"
    assert path.read_bytes() == b"right bytes"
    assert cached(path, _pin(b"right bytes"), lambda: pytest.fail("rebuilt a good file")) == b"right bytes"


def test_bytes_that_miss_the_pin_are_used_and_not_cached(tmp_path: Path) -> None:
    path = tmp_path / "model.onnx"
    assert cached(path, _pin(b"pinned"), lambda: b"other") == b"other"
    assert not path.exists()


def test_an_unwritable_cache_folder_only_costs_the_rebuild(tmp_path: Path) -> None:
    blocked = tmp_path / "file"
    blocked.write_bytes(b"")  # a file where the folder should be: nothing can be written under it
    path = blocked / "toolcrib" / "model.onnx"
    assert cached(path, _pin(b"data"), lambda: b"data") == b"data"
