"""The store as a use case sees it: the database, the box that seals secrets in it, and the clock.

A use case that only reads and writes rows takes a ``Storage`` and nothing else, so its test builds
a database and a box, not a gateway. The clock is the one injected into the process (tests pass
their own), the same one every expiry and every audit time is read from.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from toolcrib.store.crypto import SecretBox
from toolcrib.store.database import Database

__all__ = ["Storage"]


@dataclass(frozen=True, slots=True)
class Storage:
    """The database, the sealing box and the clock of one gateway process."""

    db: Database
    box: SecretBox
    clock: Callable[[], float] = field(default=time.time)
