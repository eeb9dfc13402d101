"""ContextForge beside toolcrib in ``bench/overhead.py`` (#12, #25), when a venv holds it.

``TOOLCRIB_BENCH_CONTEXTFORGE_VENV`` names a virtual environment with ``mcp-contextforge-gateway``
installed. 1.1.0 needs Python 3.12 (1.0.7 runs on 3.11 too)::

    python3.12 -m venv DIR && DIR/bin/pip install mcp-contextforge-gateway==1.1.0
    make contextforge-venv PY312=/path/to/python3.12 CONTEXTFORGE_VENV=DIR   # the same

Without the variable the bench skips the row and says so (in its table and its JSON); with it set,
a ContextForge that cannot be started fails the bench (``Unavailable``: the reason and the
redacted tail of ContextForge's output) instead of dropping the row.

``running`` starts ContextForge from that venv on a SQLite file of its own in a temporary folder
(its migrations run at start-up), on loopback, with its rate limiting off (its per-minute limits
would otherwise cap the concurrent runs) and loopback upstreams allowed (its SSRF guard refuses
them by default). Every secret and password is random and long: 1.1.0 refuses to start (exit 1,
``SecurityConfigurationError``) on a weak or default one, ``DEFAULT_USER_PASSWORD``'s default
``changeme`` included, while email authentication is on. It mints an admin token with
ContextForge's own ``create_jwt_token``, registers the bench's upstream over Streamable HTTP,
waits until the upstream's ``echo_message`` is listed (ContextForge names it
``desk-echo-message``) and yields where to call it. ``stateful`` picks its
``USE_STATEFUL_SESSIONS``; ``json_response_enabled`` stays at its default.
"""

from __future__ import annotations

import os
import re
import secrets
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import IO

import httpx2

from _procs import descendants, free_port, pss_mb, rss_mb, stop, wait_http

__all__ = ["VENV_VARIABLE", "ContextForge", "Unavailable", "check", "running", "skipped"]

VENV_VARIABLE = "TOOLCRIB_BENCH_CONTEXTFORGE_VENV"
_GATEWAY = "desk"  # the registered upstream's name: ContextForge prefixes its tools with it
_TOOL = f"{_GATEWAY}-echo-message"
_ADMIN = "admin@example.com"
_TAIL = 4000  # characters of ContextForge's output a failure quotes
_JWT = re.compile(r"eyJ[\w-]+\.[\w-]+\.[\w-]*")
_BEARER = re.compile(r"(?i)(bearer\s+)\S+")


class Unavailable(RuntimeError):
    """The named venv's ContextForge could not be started or driven: the bench fails with this."""


@dataclass(frozen=True)
class ContextForge:
    url: str  # its MCP endpoint
    token: str
    tool: str  # the upstream's echo_message as ContextForge lists it
    pid: int
    version: str
    python: str
    healthz_s: float  # start to /health 200 (a new database: its migrations included)
    rss_idle_mb: float  # the server process alone
    processes: int  # the server and the workers it forked (1.1.0's sandbox pools)
    pss_idle_tree_mb: float  # all of them, shared pages counted once


def skipped() -> str | None:
    """Why there is no ContextForge row (the variable is not set), or None when there must be one."""
    if os.environ.get(VENV_VARIABLE):
        return None
    return (
        f"{VENV_VARIABLE} is not set, so no ContextForge row (python3.12 -m venv DIR && "
        "DIR/bin/pip install mcp-contextforge-gateway==1.1.0, then set it to DIR)"
    )


def check() -> tuple[str, str]:
    """ContextForge's version and its Python's, from the named venv; ``Unavailable`` when the venv
    does not hold it. Cheap, so the bench can fail before its minutes of other runs."""
    venv = Path(os.environ[VENV_VARIABLE])
    python, server = venv / "bin" / "python", venv / "bin" / "mcpgateway"
    if not python.exists() or not server.exists():
        raise Unavailable(
            f"{VENV_VARIABLE}={venv}: no {python} or no {server} (is it a venv holding ContextForge?)"
        )
    code = (
        "import importlib.metadata as m, platform; "
        "print(m.version('mcp-contextforge-gateway')); print(platform.python_version())"
    )
    out = subprocess.run(
        [str(python), "-c", code], capture_output=True, text=True, timeout=60, env=_clean_env()
    )
    lines = out.stdout.split()
    if out.returncode != 0 or len(lines) != 2:
        raise Unavailable(f"{python} cannot read ContextForge's version:\n{_tail(out.stderr, [])}")
    return lines[0], lines[1]


def _clean_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}


def _tail(text: str, hidden: list[str]) -> str:
    """The end of ContextForge's output with the run's secrets and anything token-shaped blanked."""
    text = text[-_TAIL:]
    for value in hidden:
        text = text.replace(value, "[redacted]")
    return _BEARER.sub(r"\1[redacted]", _JWT.sub("[redacted]", text))


def _token(python: Path, env: dict[str, str], folder: str, hidden: list[str]) -> str:
    """An admin token from ContextForge's own minting tool (it reads the settings ``env`` holds)."""
    cmd = [str(python), "-m", "mcpgateway.utils.create_jwt_token", "--username", _ADMIN, "--admin"]
    cmd += ["--exp", "120", "--secret", env["JWT_SECRET_KEY"]]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=60, env=env, cwd=folder)
    token = out.stdout.strip().splitlines()[0] if out.stdout.strip() else ""
    if out.returncode != 0 or not _JWT.fullmatch(token):
        raise Unavailable(
            f"its create_jwt_token exited {out.returncode}:\n{_tail(out.stderr + out.stdout, hidden)}"
        )
    return token


def _register(base: str, token: str, upstream: str) -> None:
    """The upstream registered over Streamable HTTP, and its echo tool listed (bounded wait)."""
    headers = {"Authorization": f"Bearer {token}"}
    body = {"name": _GATEWAY, "url": upstream, "transport": "STREAMABLEHTTP"}
    registered = httpx2.post(base + "/gateways", headers=headers, json=body, timeout=60)
    if registered.status_code >= 400:
        raise Unavailable(f"POST /gateways answered {registered.status_code}: {registered.text[:500]}")
    deadline, names = time.monotonic() + 60, []
    while time.monotonic() < deadline:
        listed = httpx2.get(base + "/tools", headers=headers, timeout=30)
        if listed.status_code == 200:
            items = listed.json()
            items = items.get("items", []) if isinstance(items, dict) else items
            names = [t.get("name") for t in items if isinstance(t, dict)]
            if _TOOL in names:
                return
        time.sleep(0.2)
    raise Unavailable(
        f"{_TOOL} was not listed within 60 s of registering the upstream (listed: {names[:20]})"
    )


def _settings(folder: str, stateful: bool) -> dict[str, str]:
    """ContextForge's environment for one run: its own database, random strong secrets."""
    return {
        **_clean_env(),
        "DATABASE_URL": f"sqlite:///{folder}/mcp.db",
        "JWT_SECRET_KEY": secrets.token_hex(32),
        "AUTH_ENCRYPTION_SECRET": secrets.token_hex(32),
        "PLATFORM_ADMIN_EMAIL": _ADMIN,
        "PLATFORM_ADMIN_PASSWORD": "Bench-" + secrets.token_hex(12),
        "DEFAULT_USER_PASSWORD": "Bench-" + secrets.token_hex(12),  # 1.1.0 rejects 'changeme'
        "BASIC_AUTH_PASSWORD": "Bench-" + secrets.token_hex(12),  # and 1.1.0's checks, if basic auth is on
        "RATE_LIMITING_ENABLED": "false",
        "TOOL_RATE_LIMIT": "1000",  # 1.0.x's per-minute tool limit
        "SSRF_ALLOW_LOCALHOST": "true",
        "MCPGATEWAY_UI_ENABLED": "false",
        "MCPGATEWAY_ADMIN_API_ENABLED": "true",
        "USE_STATEFUL_SESSIONS": "true" if stateful else "false",
        "LOG_LEVEL": "ERROR",
    }


def _stop_tree(proc: subprocess.Popen[bytes], workers: list[int]) -> None:
    """Stop the server, then any worker it forked that outlived it (only the pids it started)."""
    stop(proc)
    for pid in workers:
        with suppress(ProcessLookupError):
            os.kill(pid, 9)


@contextmanager
def running(upstream: str, *, stateful: bool) -> Iterator[ContextForge]:
    """ContextForge from the venv, with ``upstream`` registered; stopped on exit. ``Unavailable``,
    with the reason and the redacted tail of its output, when it cannot be started or driven."""
    version, python_version = check()
    venv = Path(os.environ[VENV_VARIABLE])
    python, port = venv / "bin" / "python", free_port()
    with tempfile.TemporaryDirectory(prefix="tc-contextforge-") as folder:
        env = _settings(folder, stateful)
        hidden = [v for k, v in env.items() if k.endswith(("_SECRET", "_SECRET_KEY", "_PASSWORD"))]
        path = Path(folder) / "contextforge.log"
        log: IO[bytes] = open(path, "ab")  # noqa: SIM115
        cmd = [str(venv / "bin" / "mcpgateway"), "--host", "127.0.0.1", "--port", str(port)]
        proc = subprocess.Popen(cmd, cwd=folder, env=env, stdout=log, stderr=log)
        workers: list[int] = []
        base = f"http://127.0.0.1:{port}"
        try:
            try:
                ready = wait_http(base + "/health", proc, timeout=180)
                workers = descendants(proc.pid)
                idle = rss_mb(proc.pid), pss_mb([proc.pid, *workers]), 1 + len(workers)
                token = _token(python, env, folder, hidden)
                hidden.append(token)
                _register(base, token, upstream)
            except (
                RuntimeError,
                TimeoutError,
                ValueError,
                subprocess.SubprocessError,
                httpx2.HTTPError,
            ) as e:
                reason = "no /health 200 within 180 s" if isinstance(e, TimeoutError) else str(e)
                log.flush()
                mode = "stateful" if stateful else "stateless"
                raise Unavailable(
                    f"ContextForge {version} (Python {python_version}) from {venv} could not be started "
                    f"({mode}): {reason}\n--- the end of its output (secrets and tokens redacted) ---\n"
                    + _tail(path.read_text(errors="replace"), hidden)
                ) from None
            yield ContextForge(
                url=base + "/mcp",
                token=token,
                tool=_TOOL,
                pid=proc.pid,
                version=version,
                python=python_version,
                healthz_s=round(ready, 2),
                rss_idle_mb=round(idle[0], 1),
                processes=idle[2],
                pss_idle_tree_mb=round(idle[1], 1),
            )
        finally:
            _stop_tree(proc, sorted({*workers, *descendants(proc.pid)}))
            log.close()
