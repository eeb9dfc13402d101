"""``toolcrib serve --workers N``: N gateway processes behind one port, each a replica (R-15.2, #11),
on SQLite and on a real PostgreSQL server."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import httpx2
import pytest
from tests.conftest import ROOT, TOOLCRIB, cli_json, env_for, free_port, key_env, wait_http
from tests.pg import read_rows

pytestmark = pytest.mark.e2e

WORKERS = 2


def _until(check: object, what: str, timeout: float = 60.0) -> None:
    """Poll ``check`` (a callable) until it is true, within ``timeout`` (a bound, not a wait)."""
    deadline = time.monotonic() + timeout
    while not check():  # type: ignore[operator]
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what} not within {timeout} s")
        time.sleep(0.1)


def test_r15_2_serve_with_two_workers_runs_two_gateway_processes_on_one_port(
    store_url: str, tmp_path: Path
) -> None:
    owner = str(cli_json(store_url, "init")["token"])  # type: ignore[index]
    port = free_port()
    command = [*TOOLCRIB, "serve", "--port", str(port), "--database", store_url, "--workers", str(WORKERS)]
    env = env_for({**key_env(store_url), "TOOLCRIB_SEMANTIC": "false"})
    with open(tmp_path / "serve.log", "wb") as log:
        proc = subprocess.Popen(command, cwd=ROOT, env=env, stdout=log, stderr=log)
        try:
            base = f"http://127.0.0.1:{port}"
            wait_http(base + "/healthz", 60.0, proc)
            # Each worker registers its own gateway process once it has opened the database.
            _until(lambda: read_rows(store_url, "SELECT count(*) FROM instances") == [(WORKERS,)], "workers")
            headers = {"Authorization": f"Bearer {owner}", "Accept": "application/json, text/event-stream"}
            body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
            for _ in range(4):
                answer = httpx2.post(base + "/mcp", json=body, headers=headers, timeout=30)
                assert answer.status_code == 200
                assert answer.json()["result"]["tools"]
        finally:
            proc.terminate()
            proc.wait(30)
