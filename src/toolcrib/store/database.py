"""The database: one async engine, schema upgraded by Alembic migrations at start-up (R-15.1).

Every failure of the driver is translated here, at the store boundary: a busy SQLite file is waited
for (SQLite's own busy timeout, then retries with a growing pause) up to ``busy_seconds`` and then
answers ``StoreBusy``; any other database failure is a ``StoreError`` whose message names what
failed, never the SQL or the driver's text (that goes to the log only).

On SQLite a transaction opened with ``begin()`` is ``BEGIN IMMEDIATE``: it takes the write lock when
it starts, where waiting and retrying are safe because nothing has run yet, instead of upgrading a
read snapshot half-way (which SQLite refuses at once with "database is locked" when another
connection wrote meanwhile). ``read()`` opens a plain deferred transaction for read-only work, which
runs beside a writer. On SQLite a cancellation never cuts a statement short: it takes effect between
statements (``_WholeStatements``).
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import sqlite3
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import anyio
import anyio.lowlevel
from sqlalchemy import Connection, event, inspect, text
from sqlalchemy.exc import DBAPIError, SQLAlchemyError
from sqlalchemy.exc import TimeoutError as PoolTimeout
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, create_async_engine

from toolcrib import tracing
from toolcrib.errors import StoreBusy, StoreError
from toolcrib.settings import async_database_url

if TYPE_CHECKING:
    from sqlalchemy.dialects.postgresql import Insert as PostgresInsert
    from sqlalchemy.dialects.sqlite import Insert as SqliteInsert
    from sqlalchemy.sql.expression import TableClause

__all__ = ["SCHEMA_HEAD", "Database", "is_busy"]

T = TypeVar("T")

logger = logging.getLogger(__name__)

_MIGRATIONS = Path(__file__).parent / "migrations"
SCHEMA_HEAD = "0014"
"""The newest migration's revision (``tests/store`` keeps it equal to Alembic's head): a database
recorded at it needs no migration, and the start-up then does not load Alembic at all."""
# The database whose write turn the current task holds (so a nested transaction does not wait).
_turn_holder: ContextVar[Database | None] = ContextVar("toolcrib_write_turn", default=None)
_BEGIN_OPTION = "toolcrib_begin"
_FIRST_PAUSE = 0.01
_MAX_PAUSE = 0.25
# SQLite's own wait on a locked file, per attempt; attempts repeat until ``busy_seconds`` is spent.
_SQLITE_WAIT_MS = 1000


def is_busy(exc: BaseException) -> bool:
    """Whether ``exc`` is SQLite's "database is locked / busy" (a retryable contention error)."""
    if isinstance(exc, PoolTimeout):
        return True  # every pooled connection is in use: the same contention, one level up
    orig = exc.orig if isinstance(exc, DBAPIError) else exc
    name = type(orig).__name__
    text = str(orig).lower()
    return name == "OperationalError" and ("database is locked" in text or "database is busy" in text)


def _described(exc: BaseException) -> str:
    """A database failure for the log: driver error class, primary message, statement; no values."""
    orig = exc.orig if isinstance(exc, DBAPIError) else exc
    diag = getattr(orig, "diag", None)  # psycopg: the primary message without DETAIL or HINT
    message = getattr(diag, "message_primary", None) or str(orig).split("\n", 1)[0]
    statement = getattr(exc, "statement", None)
    where = f" [SQL: {statement}]" if statement else ""
    return f"({type(orig).__module__}.{type(orig).__name__}) {message}{where}"


def _sqlite_pragmas(busy_ms: int) -> Any:
    def on_connect(dbapi_connection: Any, _record: Any) -> None:
        # The driver emits no BEGIN of its own; ``_sqlite_begin`` does (the SQLAlchemy recipe).
        dbapi_connection.isolation_level = None
        _set_pragmas(dbapi_connection, busy_ms)

    return on_connect


def _set_pragmas(dbapi_connection: Any, busy_ms: int) -> None:
    # WAL lets readers run beside the one writer; busy_timeout waits instead of failing at once.
    # synchronous=NORMAL in WAL: a commit writes its frames to the WAL file (write(2), into the
    # OS) before it returns, and the WAL is fsynced at each checkpoint. A committed transaction
    # therefore survives any crash of this process (SIGKILL, OOM kill, a fault): the audit row
    # of is durable against the crash the SPEC names. Only an OS crash or a power loss
    # can roll back the last transactions before a checkpoint; FULL (an fsync per commit)
    # would cover that too, at ~1 fsync per audit write (docs/performance.md, #12).
    cursor = dbapi_connection.cursor()
    cursor.execute(f"PRAGMA busy_timeout={busy_ms}")
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.close()


def _sqlite_begin(conn: Connection) -> None:
    conn.exec_driver_sql(conn.get_execution_options().get(_BEGIN_OPTION, "BEGIN IMMEDIATE"))


class Database:
    """An async SQLAlchemy engine over SQLite (default) or PostgreSQL."""

    def __init__(self, url: str, *, busy_seconds: float = 15.0) -> None:
        self.url = url
        self.busy_seconds = busy_seconds
        self.is_sqlite = url.startswith("sqlite")
        self.audit_sinks: tuple[str, ...] = ()
        self.audit_writer: object = None
        """The group-commit writer of audit rows on this database (``store.audit``), made at first use."""
        """The sinks an audit entry made final here fans out to (``outbox.use_sinks``, R-11.4)."""
        self._writers: anyio.Lock | None = anyio.Lock() if self.is_sqlite else None
        self._busy_ms = max(1, min(_SQLITE_WAIT_MS, int(busy_seconds * 1000)))
        self._raw_writer: sqlite3.Connection | None = None
        self._raw_readers: list[sqlite3.Connection] = []
        if self.is_sqlite:
            path = Path(url.removeprefix("sqlite:///"))
            path.parent.mkdir(parents=True, exist_ok=True)
            self._path = str(path)
        try:
            # hide_parameters: a failed statement's bound values (tokens, secrets, arguments) stay
            # out of the exception text and so out of every log line that quotes it (#21).
            self.engine: AsyncEngine = create_async_engine(async_database_url(url), hide_parameters=True)
        except (SQLAlchemyError, ImportError) as exc:
            raise StoreError(f"cannot open the database ({type(exc).__name__})") from exc
        if self.is_sqlite:
            event.listen(self.engine.sync_engine, "connect", _sqlite_pragmas(self._busy_ms))
            event.listen(self.engine.sync_engine, "begin", _sqlite_begin)

    async def migrate(self, revision: str = "head") -> None:
        """Upgrade the schema to ``revision`` (the newest migration by default).

        A database already at ``SCHEMA_HEAD`` (every start but the first after an upgrade) is
        left alone without Alembic: importing it and reading its scripts was ~0.1–0.2 s of each
        start-up (#12)."""
        if revision == "head" and await self.schema_revision() == SCHEMA_HEAD:
            return

        def upgrade(sync_connection: Connection) -> None:
            from alembic import command
            from alembic.config import Config

            config = Config()
            config.set_main_option("script_location", str(_MIGRATIONS))
            config.attributes["connection"] = sync_connection
            command.upgrade(config, revision)

        async with self.begin() as conn:
            if not self.is_sqlite:  # replicas starting at once: one migrates, the others then see it done
                await conn.execute(_XACT_LOCK, {"key": _lock_key("toolcrib migrations")})
            await conn.run_sync(upgrade)

    async def schema_revision(self) -> str | None:
        """The revision Alembic recorded, or None (a new database, or none recorded)."""

        def read(sync_connection: Connection) -> str | None:
            if not inspect(sync_connection).has_table("alembic_version"):
                return None
            found = sync_connection.execute(text("SELECT version_num FROM alembic_version")).scalars().all()
            return str(found[0]) if len(found) == 1 else None

        async with self.read() as conn:
            return await conn.run_sync(read)

    @asynccontextmanager
    async def begin(self) -> AsyncIterator[AsyncConnection]:
        """A connection in a (write) transaction, committed on success.

        A busy database is waited for up to ``busy_seconds`` (then ``StoreBusy``); every other
        database failure becomes a ``StoreError`` without SQL.
        """
        async with self._transaction("BEGIN IMMEDIATE") as conn:
            yield conn

    @asynccontextmanager
    async def read(self) -> AsyncIterator[AsyncConnection]:
        """A connection in a read-only transaction; it does not wait for a writer on SQLite."""
        async with self._transaction("BEGIN") as conn:
            yield conn

    @asynccontextmanager
    async def autocommit(self) -> AsyncIterator[AsyncConnection]:
        """PostgreSQL only: a connection whose every statement commits on its own, with no
        ``BEGIN``/``COMMIT`` round trips (a hot-path statement that is atomic by itself, #21).
        Failures are translated as in ``begin``."""
        assert not self.is_sqlite, "autocommit() is for PostgreSQL"
        with self._span("autocommit"):
            try:
                conn = await (await self.engine.connect()).execution_options(isolation_level="AUTOCOMMIT")
            except SQLAlchemyError as exc:
                raise self._translated(exc) from exc
            try:
                yield conn
            except SQLAlchemyError as exc:
                raise self._translated(exc) from exc
            finally:
                with anyio.CancelScope(shield=True):
                    await _quietly_close(conn)

    @asynccontextmanager
    async def _transaction(self, begin: str) -> AsyncIterator[AsyncConnection]:
        deadline = time.monotonic() + self.busy_seconds
        with self._span("write" if begin != "BEGIN" else "read"):
            async with self._writer_turn(begin, deadline):
                conn = await self._connect(begin, deadline)
                async with self._committed(conn) as live:
                    yield live

    def _span(self, access: str) -> tracing.SpanScope:
        """R-14.2: one span per transaction of a traced call (its wait for a write turn included);
        it names the engine and the kind of access, never a statement or a value."""
        return tracing.child_span(
            "db.transaction",
            {"db.system.name": "sqlite" if self.is_sqlite else "postgresql", "toolcrib.db.access": access},
        )

    @asynccontextmanager
    async def _writer_turn(self, begin: str, deadline: float) -> AsyncIterator[None]:
        """On SQLite, this process's writers take turns here (first come, first served) instead of
        each holding a pooled connection while SQLite's busy handler polls; a nested transaction
        of the same task does not wait for itself."""
        if self._writers is None or begin == "BEGIN" or _turn_holder.get() is self:
            yield
            return
        with anyio.move_on_after(max(0.0, deadline - time.monotonic())) as waited:
            await self._writers.acquire()
        if waited.cancelled_caught:
            logger.warning("database busy: no write turn within %g s", self.busy_seconds)
            raise StoreBusy(f"the database stayed busy for over {self.busy_seconds:g} s; retry the call")
        token = _turn_holder.set(self)
        try:
            yield
        finally:
            _turn_holder.reset(token)
            self._writers.release()

    @asynccontextmanager
    async def _committed(self, conn: AsyncConnection) -> AsyncIterator[AsyncConnection]:
        try:
            yield conn
            await conn.commit()
        except BaseException as exc:
            with anyio.CancelScope(shield=True):
                await _quietly_rollback(conn)
            if isinstance(exc, SQLAlchemyError):
                raise self._translated(exc) from None
            raise
        finally:
            with anyio.CancelScope(shield=True):
                await _quietly_close(conn)

    async def _connect(self, begin: str, deadline: float) -> AsyncConnection:
        """A connection whose transaction has begun, retrying a busy database with back-off."""
        pause = _FIRST_PAUSE
        while True:
            try:
                return await self._attempt(begin)
            except SQLAlchemyError as exc:
                if not is_busy(exc) or time.monotonic() + pause > deadline:
                    raise self._translated(exc) from None
            await anyio.sleep(pause)
            pause = min(_MAX_PAUSE, pause * 2)

    async def _attempt(self, begin: str) -> AsyncConnection:
        """One connect-and-begin, shielded: a cancellation cannot leave a connection half-opened
        (checked out of the pool, or holding SQLite's write lock, with no one to close it)."""
        with anyio.CancelScope(shield=True):
            conn = await (_WholeStatements(self.engine) if self.is_sqlite else self.engine.connect())
            try:
                if self.is_sqlite:
                    conn = await conn.execution_options(**{_BEGIN_OPTION: begin})
                await conn.begin()
            except BaseException:
                await _quietly_close(conn)
                raise
        return conn

    # --- one process at a time: PostgreSQL advisory locks (R-15.2, #11) ---------------------------

    @asynccontextmanager
    async def exclusive(self, name: str, *, wait_seconds: float = 0.0) -> AsyncIterator[bool]:
        """Whether this process holds the job ``name`` alone while the block runs.

        On PostgreSQL it is a session advisory lock on a connection of its own (it dies with the
        connection, so a killed holder frees it at once). Yields true when the lock was free; when
        another process held it, waits (polling, up to ``wait_seconds``) until that one is done and
        yields false: the caller then takes the other's result instead of doing the work again.
        On SQLite (one host, writers serialized by the file) it always yields true.
        """
        if self.is_sqlite:
            yield True
            return
        key = _lock_key(name)
        try:
            conn = await (await self.engine.connect()).execution_options(isolation_level="AUTOCOMMIT")
        except SQLAlchemyError as exc:
            raise self._translated(exc) from None
        try:
            mine = await self._try_lock(conn, key)
            if not mine:
                await self._wait_for_lock(conn, key, time.monotonic() + wait_seconds)
            yield mine
        finally:
            with anyio.CancelScope(shield=True):
                await _quietly_unlock(conn)
                await _quietly_close(conn)

    async def _try_lock(self, conn: AsyncConnection, key: int) -> bool:
        try:
            return bool((await conn.execute(_TRY_LOCK, {"key": key})).scalar_one())
        except SQLAlchemyError as exc:
            raise self._translated(exc) from None

    async def _wait_for_lock(self, conn: AsyncConnection, key: int, deadline: float) -> None:
        """Until the holder lets go (then let go at once) or ``deadline``; nothing is done meanwhile."""
        pause = _FIRST_PAUSE
        while time.monotonic() + pause <= deadline:
            await anyio.sleep(pause)
            pause = min(_MAX_PAUSE, pause * 2)
            if await self._try_lock(conn, key):
                return  # released by ``exclusive`` on the way out

    # --- the hot path on SQLite: one thread hop per transaction (#12) ----------------------------

    async def run_write(self, work: Callable[[sqlite3.Connection], T]) -> T:
        """SQLite only: ``work`` in one ``BEGIN IMMEDIATE`` transaction, committed on return.

        It runs on one connection reserved for these writes, in a worker thread, as one hop (the
        SQLAlchemy path costs a hop per statement, per begin, commit and pool reset). The write
        turn, the busy retries and the ``StoreBusy``/``StoreError`` answers are those of ``begin``.
        """
        deadline = time.monotonic() + self.busy_seconds
        with self._span("write"):
            async with self._writer_turn("BEGIN IMMEDIATE", deadline):
                return await self._raw(
                    lambda: self._run_raw(self._writer_connection(), "BEGIN IMMEDIATE", work), deadline
                )

    async def run_read(self, work: Callable[[sqlite3.Connection], T]) -> T:
        """SQLite only: ``work`` in one read transaction (beside a writer), in a worker thread."""
        deadline = time.monotonic() + self.busy_seconds

        def read() -> T:
            try:
                conn = self._raw_readers.pop()
            except IndexError:
                conn = self._raw_connect()
            try:
                return self._run_raw(conn, "BEGIN", work)
            finally:
                self._raw_readers.append(conn)

        with self._span("read"):
            return await self._raw(read, deadline)

    async def _raw(self, call: Callable[[], T], deadline: float) -> T:
        pause = _FIRST_PAUSE
        while True:
            try:
                with anyio.CancelScope(shield=True):  # the thread finishes its transaction anyway
                    return await anyio.to_thread.run_sync(call)
            except sqlite3.Error as exc:
                if not is_busy(exc) or time.monotonic() + pause > deadline:
                    raise self._translated(exc) from None
            await anyio.sleep(pause)
            pause = min(_MAX_PAUSE, pause * 2)

    @staticmethod
    def _run_raw(conn: sqlite3.Connection, begin: str, work: Callable[[sqlite3.Connection], T]) -> T:
        conn.execute(begin)
        try:
            result = work(conn)
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
        return result

    def _writer_connection(self) -> sqlite3.Connection:
        if self._raw_writer is None:
            self._raw_writer = self._raw_connect()
        return self._raw_writer

    def _raw_connect(self) -> sqlite3.Connection:
        conn = sqlite3.connect(self._path, isolation_level=None, check_same_thread=False)
        _set_pragmas(conn, self._busy_ms)
        return conn

    def _translated(self, exc: Exception) -> StoreError:
        """The caller's error, raised ``from None``: the driver's text stays out of every traceback.

        What is logged instead is :func:`_described`: the statement and the database's primary
        message, never a bound value nor PostgreSQL's DETAIL line (which quotes the row) (#21).
        """
        if is_busy(exc):
            logger.warning("database busy for over %g s: %s", self.busy_seconds, _described(exc))
            return StoreBusy(f"the database stayed busy for over {self.busy_seconds:g} s; retry the call")
        logger.error("database error: %s", _described(exc))
        return StoreError(f"the database failed ({type(exc).__name__}); the details are in the log")

    def dialect_insert(self, table: TableClause) -> SqliteInsert | PostgresInsert:
        """An ``INSERT`` into ``table`` in this database's dialect (its ``ON CONFLICT`` clauses).
        PostgreSQL's dialect module is imported on PostgreSQL only: ~50 ms of every one-shot
        command on SQLite was its import (#33)."""
        if self.is_sqlite:
            from sqlalchemy.dialects.sqlite import insert as sqlite_insert

            return sqlite_insert(table)
        from sqlalchemy.dialects.postgresql import insert as pg_insert

        return pg_insert(table)

    async def close(self) -> None:
        raw = [c for c in (self._raw_writer, *self._raw_readers) if c is not None]
        self._raw_writer, self._raw_readers = None, []
        for conn in raw:
            conn.close()
        await self.engine.dispose()


class _WholeStatements(AsyncConnection):
    """A SQLite connection whose statements, once sent, are waited for to the end; a cancellation
    takes effect just after the statement, between two, where nothing is in flight.

    aiosqlite runs each statement to completion in the connection's thread whatever the caller
    does, so the wait is bounded by the statement itself (a lock is waited for at most SQLite's
    busy timeout). Cut short, it made SQLAlchemy invalidate the connection and close it in a task of
    its own that no one awaits; cancelled in turn, that task could wait forever on the connection's
    stopped thread, and closing the event loop then hung (#11).
    """

    __slots__ = ()

    async def execute(self, *args: Any, **kwargs: Any) -> Any:
        return await _whole(super().execute(*args, **kwargs))

    async def exec_driver_sql(self, *args: Any, **kwargs: Any) -> Any:
        return await _whole(super().exec_driver_sql(*args, **kwargs))

    async def run_sync(self, *args: Any, **kwargs: Any) -> Any:
        return await _whole(super().run_sync(*args, **kwargs))

    async def commit(self) -> None:
        with anyio.CancelScope(shield=True):  # no checkpoint after it: what committed is not undone
            await super().commit()


async def _whole(statement: Awaitable[T]) -> T:
    """``statement`` waited for to its end; a pending cancellation is raised right after it."""
    with anyio.CancelScope(shield=True):
        result = await statement
    await anyio.lowlevel.checkpoint_if_cancelled()
    return result


async def _quietly_rollback(conn: AsyncConnection) -> None:
    try:
        if conn.in_transaction():
            await conn.rollback()
    except Exception:  # the driver may fail in its own ways while rolling back
        logger.debug("rollback failed", exc_info=True)


_TRY_LOCK = text("SELECT pg_try_advisory_lock(:key)")
_XACT_LOCK = text("SELECT pg_advisory_xact_lock(:key)")


def _lock_key(name: str) -> int:
    """The 64-bit advisory lock key of a job name."""
    return int.from_bytes(hashlib.sha256(name.encode()).digest()[:8], "big", signed=True)


_UNLOCK_ALL = text("SELECT pg_advisory_unlock_all()")


async def _quietly_unlock(conn: AsyncConnection) -> None:
    try:
        await conn.execute(_UNLOCK_ALL)  # this connection holds no other lock
    except Exception:  # never back to the pool holding a lock: the connection is dropped instead
        logger.debug("advisory unlock failed", exc_info=True)
        with contextlib.suppress(Exception):
            await conn.invalidate()


async def _quietly_close(conn: AsyncConnection) -> None:
    try:
        await conn.close()
    except Exception:  # the driver may fail in its own ways while closing; nothing is lost
        logger.debug("close failed", exc_info=True)
