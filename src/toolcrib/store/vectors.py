"""The vector cache: a tool's unit vector by model and by the sha256 of its text (R-5.8).

Rows are never updated, only added: the same text under the same model always has the same vector,
so two replicas writing one row at once both write the same bytes and one insert is simply skipped.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping

from sqlalchemy import func, select

from toolcrib.store.database import Database
from toolcrib.store.tables import vectors

__all__ = ["count_vectors", "load_vectors", "save_vectors"]

_CHUNK = 500  # keys per IN (...) list: well under SQLite's bound-parameter limit


async def load_vectors(db: Database, model_id: str, hashes: Collection[str]) -> dict[str, bytes]:
    """The cached vectors of those of ``hashes`` that have one, as stored bytes."""
    keys = sorted(set(hashes))
    found: dict[str, bytes] = {}
    async with db.begin() as conn:
        for start in range(0, len(keys), _CHUNK):
            chunk = keys[start : start + _CHUNK]
            rows = await conn.execute(
                select(vectors.c.text_sha256, vectors.c.vector).where(
                    vectors.c.model_id == model_id, vectors.c.text_sha256.in_(chunk)
                )
            )
            found.update({str(key): bytes(blob) for key, blob in rows})
    return found


async def save_vectors(db: Database, model_id: str, rows: Mapping[str, bytes]) -> None:
    """Add vectors by text hash; a row another process added meanwhile is left as it is."""
    if not rows:
        return
    insert = db.dialect_insert
    values = [{"model_id": model_id, "text_sha256": key, "vector": blob} for key, blob in rows.items()]
    async with db.begin() as conn:
        for start in range(0, len(values), _CHUNK):
            await conn.execute(insert(vectors).on_conflict_do_nothing(), values[start : start + _CHUNK])


async def count_vectors(db: Database, model_id: str) -> int:
    async with db.begin() as conn:
        return int(
            (await conn.execute(select(func.count()).where(vectors.c.model_id == model_id))).scalar_one()
        )
