"""A real PostgreSQL server started by the test run itself (#11, SPEC R-15).

``PostgresServer.start()`` finds the server binaries (``PATH``, else Debian's
``/usr/lib/postgresql/*/bin``), runs ``initdb`` into a fresh temporary directory, starts the server
on a free loopback port with its unix socket inside that directory, and ``stop()`` removes it all.
``initdb`` refuses to run as root, so under root (as CI runs) the server runs as the ``postgres``
system user (Debian's package creates it), the directory handed over to it.

Tests that need PostgreSQL are skipped only when the binaries or the driver cannot be found, and
say so; under ``CI=true`` they fail instead (``.ci/run`` installs the ``postgresql`` package).
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import subprocess
import tempfile
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from tests.conftest import free_port

__all__ = ["PostgresServer", "PostgresUnavailable", "find_bin_dir"]

SUPERUSER = "toolcrib"


class PostgresUnavailable(RuntimeError):
    """The PostgreSQL server binaries or the psycopg driver cannot be found on this machine."""


def find_bin_dir() -> Path:
    """The directory holding ``initdb``/``pg_ctl``: from ``PATH``, else the newest Debian version."""
    on_path = shutil.which("pg_ctl")
    if on_path is not None and shutil.which("initdb") is not None:
        return Path(os.path.realpath(on_path)).parent
    candidates = sorted(
        glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"), key=lambda p: int(Path(p).parts[-3].split(".")[0])
    )
    if not candidates:
        raise PostgresUnavailable(
            "PostgreSQL server binaries not found (no pg_ctl on PATH nor under /usr/lib/postgresql/*/bin); "
            "install Debian's 'postgresql' package (.ci/run does)"
        )
    return Path(candidates[-1]).parent


def _run_as() -> list[str]:
    """The prefix that runs a server command as the ``postgres`` user when this process is root."""
    if os.geteuid() != 0:
        return []
    try:
        pwd.getpwnam("postgres")
    except KeyError as exc:
        raise PostgresUnavailable("running as root and there is no 'postgres' system user") from exc
    return ["runuser", "-u", "postgres", "--"]


@dataclass
class PostgresServer:
    bin_dir: Path
    root: Path
    port: int
    _databases: list[str] = field(default_factory=list)
    _template: str | None = None

    @property
    def data(self) -> Path:
        return self.root / "data"

    @classmethod
    def start(cls) -> PostgresServer:
        try:
            import psycopg  # noqa: F401
        except ImportError as exc:
            raise PostgresUnavailable(
                "the psycopg driver is not installed (pip install '.[postgres]')"
            ) from exc
        bin_dir = find_bin_dir()
        prefix = _run_as()
        root = Path(tempfile.mkdtemp(prefix="toolcrib-pg-"))
        if prefix:
            shutil.chown(root, "postgres", "postgres")
        server = cls(bin_dir, root, free_port())
        try:
            server._initdb(prefix)
            server._pg_ctl(
                prefix, "start", "-w", "-t", "60", "-l", str(root / "server.log"), "-o", server._options()
            )
        except BaseException:
            shutil.rmtree(root, ignore_errors=True)
            raise
        return server

    def _initdb(self, prefix: list[str]) -> None:
        subprocess.run(
            [*prefix, str(self.bin_dir / "initdb"), "-D", str(self.data), "-U", SUPERUSER, "-A", "trust",
             "-E", "UTF8", "--locale=C", "--no-sync"],
            check=True, capture_output=True, timeout=120,
        )  # fmt: skip

    def _options(self) -> str:
        # fsync off: the tests kill gateway processes, never the server; durability against a crash
        # of the server's machine is not what they measure.
        return (
            f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1 -c max_connections=300 "
            "-c fsync=off -c full_page_writes=off"
        )

    def _pg_ctl(self, prefix: list[str], *args: str) -> None:
        subprocess.run(
            [*prefix, str(self.bin_dir / "pg_ctl"), "-D", str(self.data), *args],
            check=True, capture_output=True, timeout=120, cwd=self.root,
        )  # fmt: skip

    def url(self, database: str = "postgres") -> str:
        return f"postgresql://{SUPERUSER}@127.0.0.1:{self.port}/{database}"

    def create_database(self, *, migrated: bool = False) -> str:
        """A fresh database, empty or (``migrated``) a copy of one database migrated to the schema
        head once per server (#33: ``CREATE DATABASE ... TEMPLATE``); returns its URL."""
        import psycopg

        name = "t_" + uuid.uuid4().hex[:16]
        template = f" TEMPLATE {self._migrated_template()}" if migrated else ""
        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(f"CREATE DATABASE {name}{template} STRATEGY = FILE_COPY")
        self._databases.append(name)
        return self.url(name)

    def _migrated_template(self) -> str:
        from tests.templates import migrate_in_a_thread
        from toolcrib.store.database import SCHEMA_HEAD

        name = f"template_{SCHEMA_HEAD}"
        if self._template != name:
            import psycopg

            with psycopg.connect(self.url(), autocommit=True) as conn:
                conn.execute(f"CREATE DATABASE {name} STRATEGY = FILE_COPY")
            migrate_in_a_thread(self.url(name))  # its engine closed: a template takes no connection
            self._template = name
        return name

    def stop(self) -> None:
        try:
            self._pg_ctl(_run_as(), "stop", "-m", "immediate", "-w", "-t", "30")
        finally:
            shutil.rmtree(self.root, ignore_errors=True)

    def version(self) -> str:
        out = subprocess.run(
            [str(self.bin_dir / "postgres"), "--version"], check=True, capture_output=True, text=True
        )
        return out.stdout.strip()


def read_rows(db_url: str, sql: str) -> list[tuple[object, ...]]:
    """``sql`` run on a connection of its own (another client of the same database, SQLite or
    PostgreSQL): what is committed, as any other process would see it."""
    if db_url.startswith("sqlite:///"):
        import sqlite3
        from contextlib import closing

        with closing(sqlite3.connect(db_url.removeprefix("sqlite:///"))) as conn:
            return [tuple(r) for r in conn.execute(sql).fetchall()]
    import psycopg

    with psycopg.connect(db_url, autocommit=True) as conn:
        return [tuple(r) for r in conn.execute(sql).fetchall()]  # type: ignore[arg-type]
