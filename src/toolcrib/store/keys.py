"""One secret key per database: every process on it must seal and open credentials alike (R-15.2).

The first process to open a database records a fingerprint of its key (an HMAC of a fixed text
under the key: it tells keys apart and reveals nothing of them). A process whose key gives another
fingerprint refuses to start: replicas that each generated their own key (no ``TOOLCRIB_SECRET_KEY``)
could not read each other's credentials, and would fail later, connection by connection (#11).
"""

from __future__ import annotations

import hashlib
import hmac

from sqlalchemy import select

from toolcrib.errors import ConfigError
from toolcrib.store.database import Database
from toolcrib.store.tables import facts

__all__ = ["SharedKeyMismatch", "check_key", "fingerprint"]

_FACT = "secret_key_fingerprint"


class SharedKeyMismatch(ConfigError):
    """This process's secret key is not the one the database's credentials are sealed with."""


def fingerprint(key: bytes) -> str:
    return hmac.new(key, b"toolcrib secret key fingerprint v1", hashlib.sha256).hexdigest()[:32]


async def check_key(db: Database, key: bytes) -> None:
    """Record ``key``'s fingerprint if the database has none; refuse a key that does not match."""
    mine = fingerprint(key)
    insert = db.dialect_insert
    async with db.begin() as conn:
        await conn.execute(insert(facts).values(name=_FACT, value=mine).on_conflict_do_nothing())
        recorded = (await conn.execute(select(facts.c.value).where(facts.c.name == _FACT))).scalar_one()
    if not hmac.compare_digest(recorded, mine):
        raise SharedKeyMismatch(
            "this database's connection credentials are sealed with another secret key: every gateway "
            "process on a shared database needs the same explicit TOOLCRIB_SECRET_KEY (R-13.3, R-15.2)"
        )
