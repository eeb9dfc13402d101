"""``toolcrib serve`` keeps an idle client connection past the 5 s after which common HTTP clients
drop theirs (TOOLCRIB_HTTP_KEEP_ALIVE_SECONDS, #12), so the client always lets go first: a real
gateway process, a real socket, waited on past uvicorn's default of 5 s."""

from __future__ import annotations

import socket
import time
from pathlib import Path

from tests.conftest import cli, start_gateway

UVICORN_DEFAULT = 5.0


def _get(conn: socket.socket, host: str) -> bytes:
    conn.sendall(f"GET /healthz HTTP/1.1\r\nHost: {host}\r\n\r\n".encode())
    conn.settimeout(10)
    answer = b""
    while b"\r\n\r\n" not in answer or not answer.rstrip().endswith(b"}"):
        chunk = conn.recv(65536)
        if not chunk:
            return answer
        answer += chunk
    return answer


def test_r2_4_an_idle_client_connection_outlives_the_clients_own_keep_alive(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'gw.store.db'}"
    cli(db, "init")
    gateway = start_gateway(db, {"TOOLCRIB_HTTP_KEEP_ALIVE_SECONDS": "30"})
    try:
        host = gateway.url.removeprefix("http://")
        address, port = host.rsplit(":", 1)
        with socket.create_connection((address, int(port)), timeout=10) as conn:
            assert _get(conn, host).startswith(b"HTTP/1.1 200")
            time.sleep(UVICORN_DEFAULT + 1.5)  # idle past the default on purpose: the property is time
            assert _get(conn, host).startswith(b"HTTP/1.1 200")
    finally:
        gateway.stop()
