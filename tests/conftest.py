"""Shared test fixtures: real processes, real sockets, real SQLite files."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, NoReturn

import httpx2
import pytest

if TYPE_CHECKING:
    from tests.pg import PostgresServer

ROOT = Path(__file__).resolve().parents[1]
# The project's shared/ folder (SPEC, data) stands beside the repository; TOOLCRIB_SHARED overrides.
SHARED = Path(os.environ.get("TOOLCRIB_SHARED", ROOT.parent / "shared"))
PYTHON = sys.executable
TOOLCRIB = [PYTHON, "-m", "toolcrib.cli"]
FIXTURE_SERVER = [PYTHON, "-m", "tests.fixtures.fixture_server"]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_http(url: str, timeout: float = 30.0, proc: subprocess.Popen[bytes] | None = None) -> None:
    """Poll ``url`` until it answers (bounded), failing early if ``proc`` died."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"process exited with {proc.returncode} before serving {url}")
        try:
            httpx2.get(url, timeout=1.0)
            return
        except httpx2.HTTPError:
            time.sleep(0.1)
    raise TimeoutError(f"{url} did not answer within {timeout} s")


def env_for(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    env.update(extra or {})
    return env


def cli(
    db_url: str, *args: str, check: bool = True, env: dict[str, str] | None = None, process: bool = False
) -> subprocess.CompletedProcess[str]:
    """Run the ``toolcrib`` command line on ``db_url``: in this process where that is the same
    (``tests.clirun``), else, or with ``process=True``, as a real process."""
    return toolcrib(
        [*args, "--database", db_url], env={**key_env(db_url), **(env or {})}, check=check, process=process
    )


def cli_json(db_url: str, *args: str, process: bool = False) -> object:
    return json.loads(cli(db_url, *args, "--json", process=process).stdout)


@pytest.fixture
def cli_processes(monkeypatch: pytest.MonkeyPatch) -> None:
    """The command line of this test runs as real ``toolcrib`` processes (the smoke tests that
    keep the in-process runs honest, #33)."""
    monkeypatch.setenv("TOOLCRIB_TESTS_CLI", "process")


def toolcrib(
    argv: list[str],
    *,
    cwd: Path = ROOT,
    env: dict[str, str | None] | None = None,
    check: bool = False,
    process: bool = False,
) -> subprocess.CompletedProcess[str]:
    """``toolcrib ARGV`` in ``cwd`` with ``env`` over this process's environment (a ``None`` value
    unsets a variable); in process unless ``process`` or ``tests.clirun`` says it would differ."""
    from tests import clirun

    extra = env or {}
    if not process and clirun.in_process_allowed(argv, extra):
        done = clirun.run([*TOOLCRIB, *argv], argv, cwd=cwd, env=extra)
    else:
        full = env_for({k: v for k, v in extra.items() if v is not None})
        for name in [k for k, v in extra.items() if v is None]:
            full.pop(name, None)
        done = subprocess.run(
            [*TOOLCRIB, *argv], cwd=cwd, env=full, capture_output=True, text=True, timeout=120
        )
    if check:
        done.check_returncode()
    return done


@dataclass
class Process:
    proc: subprocess.Popen[bytes]
    url: str
    log: IO[bytes] | None = None

    def stop(self) -> None:
        self._stop()
        if self.log is not None:
            self.log.close()

    def _stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)


def start_fixture_http(extra_env: dict[str, str] | None = None, port: int | None = None) -> Process:
    port = port or free_port()
    proc = subprocess.Popen(
        [*FIXTURE_SERVER, "--http", str(port)], cwd=ROOT, env=env_for(extra_env), stderr=subprocess.DEVNULL
    )
    url = f"http://127.0.0.1:{port}/mcp"
    wait_http(f"http://127.0.0.1:{port}/", proc=proc)
    return Process(proc, url)


def start_gateway(
    db_url: str, extra_env: dict[str, str] | None = None, log_path: Path | None = None
) -> Process:
    port = free_port()
    if log_path is None:
        log_path = Path(db_url.removeprefix("sqlite:///")).with_suffix(".log")
    log = open(log_path, "ab")  # noqa: SIM115
    proc = subprocess.Popen(
        [*TOOLCRIB, "serve", "--port", str(port), "--database", db_url],
        cwd=ROOT,
        env=env_for({**key_env(db_url), **(extra_env or {})}),
        stdout=log,
        stderr=log,
    )
    base = f"http://127.0.0.1:{port}"
    started = Process(proc, base, log)
    try:
        wait_http(base + "/healthz", proc=proc)
    except Exception:
        started.stop()
        raise
    return started


@pytest.fixture(scope="session", autouse=True)
def _template_dir(tmp_path_factory: pytest.TempPathFactory) -> None:
    """The folder of this test process's migrated SQLite template (``tests.templates``), built at
    its first use."""
    from tests.templates import TEMPLATE_DIR

    TEMPLATE_DIR["dir"] = tmp_path_factory.getbasetemp()


@pytest.fixture
def db_url(tmp_path: Path) -> str:
    """A fresh SQLite organization at the schema head (a copy of the migrated template, #33)."""
    from tests.templates import migrated_sqlite

    return migrated_sqlite(tmp_path / "toolcrib.db")


# --- PostgreSQL (#11, R-15): a real server started by the test run ------------------------------

# The shared secret key every gateway process of a PostgreSQL test uses.
PG_SECRET_KEY = "n0Lq1xqVv3Zr4u0m2Q3fQm8c5o9b7lW6h1s2d3f4g5k="


def not_run(message: str) -> NoReturn:
    """Skip, saying so on stderr; under ``CI=true`` a failure instead (CI never skips them)."""
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(message + " (CI must run them)")
    sys.stderr.write(f"\n*** {message} ***\n")
    pytest.skip(message)


@pytest.fixture(scope="session")
def postgres() -> Iterator[PostgresServer]:
    """One PostgreSQL server for the whole run; skipped (loudly) only when it cannot be found,
    and a failure under ``CI=true``."""
    from tests.pg import PostgresServer, PostgresUnavailable

    try:
        server = PostgresServer.start()
    except PostgresUnavailable as exc:
        not_run(f"PostgreSQL tests NOT RUN: {exc}")
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(params=["sqlite", "postgresql"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A fresh, empty database of each kind the store supports (R-15.1)."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'toolcrib.db'}"
    server: PostgresServer = request.getfixturevalue("postgres")
    return server.create_database()


@pytest.fixture(params=["sqlite", "postgresql"])
def migrated_store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A fresh database of each kind already at the schema head: a copy of one migrated template
    (a file copy on SQLite, ``CREATE DATABASE ... TEMPLATE`` on PostgreSQL, #33)."""
    if request.param == "sqlite":
        from tests.templates import migrated_sqlite

        return migrated_sqlite(tmp_path / "toolcrib.db")
    server: PostgresServer = request.getfixturevalue("postgres")
    return server.create_database(migrated=True)


# The database in-process gateways of the running test open (``tests.e2e.inprocess.settings_for``),
# set by ``on_each_store``: a module marked ``usefixtures("on_each_store")`` runs each test on
# SQLite and on PostgreSQL.
STORE_OVERRIDE: dict[str, str] = {}


@pytest.fixture
def on_each_store(migrated_store_url: str) -> Iterator[str]:
    STORE_OVERRIDE["url"] = migrated_store_url
    try:
        yield migrated_store_url
    finally:
        STORE_OVERRIDE.clear()


def key_env(db_url: str) -> dict[str, str]:
    """The environment every process on a PostgreSQL database shares: one explicit secret key."""
    return {} if db_url.startswith("sqlite") else {"TOOLCRIB_SECRET_KEY": PG_SECRET_KEY}


RESTARTS: list[str] = []
"""What :class:`SharedFixtureServer` started again in this test process, for the run's summary."""


def pytest_sessionfinish(session: pytest.Session) -> None:
    """A worker hands its restarts to the controller (pytest-xdist's ``workeroutput``)."""
    output = getattr(session.config, "workeroutput", None)
    if output is not None:
        output["fixture_http_restarts"] = list(RESTARTS)


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: object) -> None:
    RESTARTS.extend(getattr(node, "workeroutput", {}).get("fixture_http_restarts", []))


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """Every restart of the shared fixture server, named at the end of the run: the test before
    which it happened follows the one that ended it in that worker."""
    for said in RESTARTS:
        terminalreporter.write_line(said)


class SharedFixtureServer:
    """The one fixture HTTP server a test process shares (``fixture_http``), started again on its
    own port when a test before ended it (its ``crash_server`` tool exits it, by design): one test
    that ends it must not fail every later test of the process with ``connection refused``. Each
    restart is said on stderr with the test before which it happened."""

    def __init__(self, extra_env: dict[str, str]) -> None:
        self._env = extra_env
        self._process = start_fixture_http(extra_env)
        self._port = int(self._process.url.rsplit(":", 1)[1].split("/", 1)[0])

    def alive(self, before: str = "") -> Process:
        if self._process.proc.poll() is not None:
            said = (
                f"fixture_http: the shared server had exited ({self._process.proc.returncode}); "
                f"started again on port {self._port} before {before or 'its next use'}"
            )
            print(said, file=sys.stderr)
            RESTARTS.append(said)
            self._process = start_fixture_http(self._env, port=self._port)
        return self._process

    @property
    def proc(self) -> subprocess.Popen[bytes]:
        return self.alive().proc

    @property
    def url(self) -> str:
        return self.alive().url

    def stop(self) -> None:
        self._process.stop()


@pytest.fixture(scope="session")
def _shared_fixture_http() -> Iterator[SharedFixtureServer]:
    server = SharedFixtureServer({"FIXTURE_API_KEY": "fixture-secret-key-123456"})
    yield server
    server.stop()


@pytest.fixture(scope="session")
def fixture_http(_shared_fixture_http: SharedFixtureServer) -> SharedFixtureServer:
    return _shared_fixture_http


@pytest.fixture(autouse=True)
def _fixture_http_up(request: pytest.FixtureRequest) -> None:
    """Before a test that uses the shared server, it is up (see :class:`SharedFixtureServer`)."""
    if "fixture_http" in request.fixturenames:
        server = request.getfixturevalue("_shared_fixture_http")
        server.alive(request.node.nodeid)
