"""The store as a use case sees it: the database, the box that seals secrets in it, and the clock.

A use case that only reads and writes rows takes a ``Storage`` and nothing else, so its test builds
a database and a box, not a gateway. The clock is the one injected into the process (tests pass
their own), the same one every expiry and every audit time is read from.

Every process opens the store the same way (:func:`open_store`): the database migrated, the key
loaded (or generated once, beside a SQLite file: :func:`key_file`) and checked against the one
every process on this database shares.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from toolcrib.store import keys as key_store
from toolcrib.store.crypto import SecretBox, load_or_create_key
from toolcrib.store.database import Database

if TYPE_CHECKING:
    from toolcrib.settings import Settings

__all__ = ["Storage", "key_file", "open_store"]


@dataclass(frozen=True, slots=True)
class Storage:
    """The database, the sealing box and the clock of one gateway process."""

    db: Database
    box: SecretBox
    clock: Callable[[], float] = field(default=time.time)


def key_file(settings: Settings) -> Path:
    """Where a generated secret key is kept: beside a SQLite database, else in ``.toolcrib`` here."""
    path = settings.sqlite_path()
    base = path.parent if path is not None else Path.cwd()
    return base / ".toolcrib" / "secret.key"


async def open_store(db: Database, settings: Settings) -> SecretBox:
    """Migrate ``db``, and the sealing box of the key every process on it shares."""
    await db.migrate()
    key = load_or_create_key(settings.secret_key, key_file(settings))
    box = SecretBox(key)  # a key that is no key is refused before its fingerprint is recorded
    await key_store.check_key(db, key)  # one key for every process on this database
    return box
