"""ContextForge beside toolcrib in ``bench/overhead.py`` (#12), when a venv holds it.

``TOOLCRIB_BENCH_CONTEXTFORGE_VENV`` names a virtual environment with ``mcp-contextforge-gateway``
installed (``python -m venv DIR && DIR/bin/pip install mcp-contextforge-gateway``); without it,
or when its ``mcpgateway`` is missing, the bench skips the row and says why. ``running`` starts
ContextForge from that venv on a SQLite file of its own in a temporary folder, on loopback, with
its rate limiting off (its per-minute tool limits would otherwise cap the concurrent runs) and
loopback upstreams allowed (its SSRF guard refuses them by default), mints an admin token with
its own ``create_jwt_token``, registers the bench's upstream over Streamable HTTP and yields where
to call the upstream's ``echo_message`` through it (ContextForge names it ``desk-echo-message``).
``stateful`` picks its ``USE_STATEFUL_SESSIONS``; ``json_response_enabled`` stays at its default.
"""

from __future__ import annotations

import os
import secrets
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx2

from _procs import free_port, rss_mb, stop, wait_http

__all__ = ["VENV_VARIABLE", "ContextForge", "running", "unavailable"]

VENV_VARIABLE = "TOOLCRIB_BENCH_CONTEXTFORGE_VENV"
_GATEWAY = "desk"  # the registered upstream's name: ContextForge prefixes its tools with it
_ADMIN = "admin@example.com"


@dataclass(frozen=True)
class ContextForge:
    url: str  # its MCP endpoint
    token: str
    tool: str  # the upstream's echo_message as ContextForge lists it
    pid: int
    version: str
    healthz_s: float  # start to /health 200 (a new database: its migrations included)
    rss_idle_mb: float


def unavailable() -> str | None:
    """Why there is no ContextForge row, or None when there is one."""
    venv = os.environ.get(VENV_VARIABLE)
    if not venv:
        return f"{VENV_VARIABLE} is not set; no ContextForge row"
    if not (Path(venv) / "bin" / "mcpgateway").exists():
        return f"{venv}/bin/mcpgateway does not exist; no ContextForge row"
    return None


def _version(python: Path) -> str:
    code = "import importlib.metadata as m; print(m.version('mcp-contextforge-gateway'))"
    return subprocess.run(
        [str(python), "-c", code], capture_output=True, text=True, check=True
    ).stdout.strip()


def _token(python: Path, env: dict[str, str], folder: str) -> str:
    """An admin token from ContextForge's own minting tool (it reads the settings ``env`` holds)."""
    cmd = [str(python), "-m", "mcpgateway.utils.create_jwt_token", "--username", _ADMIN, "--admin"]
    cmd += ["--exp", "120", "--secret", env["JWT_SECRET_KEY"]]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True, timeout=60, env=env, cwd=folder)
    return out.stdout.strip().splitlines()[0]


@contextmanager
def running(upstream: str, *, stateful: bool) -> Iterator[ContextForge]:
    """ContextForge from the venv, with ``upstream`` registered; stopped on exit."""
    venv = Path(os.environ[VENV_VARIABLE])
    python, port = venv / "bin" / "python", free_port()
    secret = secrets.token_hex(32)
    with tempfile.TemporaryDirectory(prefix="tc-contextforge-") as folder:
        env = {
            **{k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")},
            "DATABASE_URL": f"sqlite:///{folder}/mcp.db",
            "JWT_SECRET_KEY": secret,
            "AUTH_ENCRYPTION_SECRET": secrets.token_hex(32),
            "PLATFORM_ADMIN_EMAIL": _ADMIN,
            "PLATFORM_ADMIN_PASSWORD": "Bench-" + secrets.token_hex(12),
            "RATE_LIMITING_ENABLED": "false",
            "TOOL_RATE_LIMIT": "1000",
            "SSRF_ALLOW_LOCALHOST": "true",
            "MCPGATEWAY_UI_ENABLED": "false",
            "MCPGATEWAY_ADMIN_API_ENABLED": "true",
            "USE_STATEFUL_SESSIONS": "true" if stateful else "false",
            "LOG_LEVEL": "ERROR",
        }
        log = open(Path(folder) / "contextforge.log", "ab")  # noqa: SIM115
        cmd = [str(venv / "bin" / "mcpgateway"), "--host", "127.0.0.1", "--port", str(port)]
        proc = subprocess.Popen(cmd, cwd=folder, env=env, stdout=log, stderr=log)
        try:
            base = f"http://127.0.0.1:{port}"
            ready = wait_http(base + "/health", proc, timeout=180)
            idle = rss_mb(proc.pid)
            token = _token(python, env, folder)
            registered = httpx2.post(
                base + "/gateways",
                headers={"Authorization": f"Bearer {token}"},
                json={"name": _GATEWAY, "url": upstream, "transport": "STREAMABLEHTTP"},
                timeout=60,
            )
            registered.raise_for_status()
            yield ContextForge(
                url=base + "/mcp",
                token=token,
                tool=f"{_GATEWAY}-echo-message",
                pid=proc.pid,
                version=_version(python),
                healthz_s=round(ready, 2),
                rss_idle_mb=round(idle, 1),
            )
        finally:
            stop(proc)
            log.close()
