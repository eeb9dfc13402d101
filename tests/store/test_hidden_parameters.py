"""A failed statement's bound values never reach the log or the error text (#21, R-3.3).

SQLAlchemy quotes a failed statement's parameters in its exception text (``[parameters: ...]``);
the store logs that text. A bound value is often a secret (a token's hash, a sealed credential,
a member's arguments), so the engines are made with ``hide_parameters=True``. Against a real
SQLite file and a real PostgreSQL server: a real statement fails (a unique key broken twice with
a secret-looking value) and neither the captured log nor the error the caller gets holds it.
"""

from __future__ import annotations

import logging

import pytest
from sqlalchemy import text

from toolcrib.errors import StoreError
from toolcrib.gateway.faults import in_band
from toolcrib.logs import DRIVER_LOGGERS, configure
from toolcrib.store.database import Database

pytestmark = pytest.mark.anyio

SECRET = "tcp_SECRETtokenValue0123456789abcdef"


async def test_r3_3_failed_statement_logs_no_bound_parameter(
    store_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    db = Database(store_url, busy_seconds=10)
    try:
        async with db.begin() as conn:
            await conn.execute(text("CREATE TABLE leak_probe (v VARCHAR(80) PRIMARY KEY)"))
        insert = text("INSERT INTO leak_probe (v) VALUES (:v)")
        async with db.begin() as conn:
            await conn.execute(insert, {"v": SECRET})
        caplog.set_level(logging.INFO)  # the level a gateway logs at
        with pytest.raises(StoreError) as raised:
            async with db.begin() as conn:
                await conn.execute(insert, {"v": SECRET})
        answered = in_band(raised.value).to_payload()
    finally:
        await db.close()
    logged = "\n".join(r.getMessage() + (caplog.text if r.exc_info else "") for r in caplog.records)
    assert "database error" in logged  # the failure itself is logged, so the check is not vacuous
    assert "INSERT INTO leak_probe" in logged
    assert SECRET not in logged
    assert SECRET not in caplog.text
    chain: BaseException | None = raised.value
    while chain is not None:  # the error and every cause a face could print
        assert SECRET not in str(chain)
        shown = chain.__cause__ or (None if chain.__suppress_context__ else chain.__context__)
        chain = shown
    assert SECRET not in str(answered)


def test_r3_3_driver_debug_lines_with_bound_values_stay_off_at_debug_level() -> None:
    """aiosqlite and psycopg log each statement with its values at DEBUG: never, whatever the level."""
    root = logging.getLogger()
    handlers, level_before = root.handlers[:], root.level
    drivers = [logging.getLogger(name) for name in DRIVER_LOGGERS]
    levels = [d.level for d in drivers]
    try:
        configure("DEBUG", "text")
        assert root.isEnabledFor(logging.DEBUG)  # the gateway's own debug lines are on
        assert not [d.name for d in drivers if d.isEnabledFor(logging.DEBUG)]
    finally:
        root.handlers[:] = handlers
        root.setLevel(level_before)
        for driver, level in zip(drivers, levels, strict=True):
            driver.setLevel(level)
