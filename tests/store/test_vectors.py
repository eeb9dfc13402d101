"""The vector cache table (R-5.8): vectors by model and text hash, added once, read back in bulk."""

from __future__ import annotations

import pytest

from toolcrib.store.database import Database
from toolcrib.store.vectors import count_vectors, load_vectors, save_vectors

pytestmark = pytest.mark.anyio


async def test_r5_8_vectors_are_kept_by_model_and_text_hash_and_never_overwritten(store_url: str) -> None:
    db = Database(store_url)
    try:
        await db.migrate()
        keys = [f"{i:064x}" for i in range(1_200)]  # more than one IN (...) list
        await save_vectors(db, "model-a", {key: key.encode()[:8] for key in keys})
        await save_vectors(db, "model-a", {keys[0]: b"other bytes", "f" * 64: b"new"})
        await save_vectors(db, "model-b", {keys[1]: b"b"})
        loaded = await load_vectors(db, "model-a", [*keys, "e" * 64])
        assert len(loaded) == len(keys)
        assert loaded[keys[0]] == keys[0].encode()[:8]  # a second writer does not replace a row
        assert await count_vectors(db, "model-a") == len(keys) + 1
        assert await load_vectors(db, "model-b", keys[:3]) == {keys[1]: b"b"}
    finally:
        await db.close()
