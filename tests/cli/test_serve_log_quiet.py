"""The log of a real ``toolcrib serve`` at the default level holds no SQL (#32, finding 7).

Before, ``logs.configure`` set ``sqlalchemy.engine`` to INFO, SQLAlchemy's echo level: every
statement of every catalog poll and heartbeat was printed (490 lines in the first 40 s of
``make run``). The drivers' loggers stay at WARNING.
"""

from __future__ import annotations

import re
import subprocess
import time
from pathlib import Path

import pytest
from tests.conftest import ROOT, TOOLCRIB, env_for, free_port, wait_http
from tests.pg import read_rows

pytestmark = pytest.mark.e2e

SQL = re.compile(r"\b(SELECT|INSERT|UPDATE|DELETE|BEGIN|COMMIT|ROLLBACK|PRAGMA)\b")


def _until(check: object, what: str, timeout: float = 60.0) -> None:
    """Poll ``check`` (a callable) until it is true, within ``timeout`` (a bound, not a wait)."""
    deadline = time.monotonic() + timeout
    while not check():  # type: ignore[operator]
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what} not within {timeout} s")
        time.sleep(0.1)


def test_serve_at_the_default_level_logs_no_sql_statement_while_it_polls_and_beats(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'gw.store.db'}"
    port = free_port()
    command = [*TOOLCRIB, "serve", "--port", str(port), "--database", url]
    env = env_for(
        {
            "TOOLCRIB_SEMANTIC": "false",
            "TOOLCRIB_LOG_LEVEL": "INFO",
            "TOOLCRIB_CATALOG_POLL_SECONDS": "0.2",
            "TOOLCRIB_HEARTBEAT_SECONDS": "0.2",
        }
    )
    log_path = tmp_path / "serve.log"
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(command, cwd=ROOT, env=env, stdout=log, stderr=log)
        try:
            wait_http(f"http://127.0.0.1:{port}/healthz", 60.0, proc)
            beats: set[object] = set()

            def beaten_three_times() -> bool:  # the process ran its statements, polls among them
                beats.update(r[0] for r in read_rows(url, "SELECT heartbeat_at FROM instances"))
                return len(beats) >= 3

            _until(beaten_three_times, "three heartbeats")
        finally:
            proc.terminate()
            proc.wait(30)
    output = log_path.read_text(errors="replace")
    assert "serving" in output  # the gateway's own INFO lines are there: the check is not vacuous
    statements = [line for line in output.splitlines() if SQL.search(line)]
    assert statements == [], statements[:5]
