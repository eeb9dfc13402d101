"""One structured log line per request and per tool call (#13).

Each line says who (the member), what (the operation: an HTTP method and path, a tool name), how it
ended (an HTTP status, ``ok`` or an in-band error code) and how long it took. It never carries
arguments, results, headers or tokens. ``TOOLCRIB_LOG_FORMAT=json`` writes every log record as one
JSON object per line (these lines with their fields as keys); the default is text for people.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from datetime import UTC, datetime
from typing import Any, Literal, TypeVar

import anyio

__all__ = ["DRIVER_LOGGERS", "JsonFormatter", "RequestLog", "configure", "log_event", "shown_path", "traced"]

T = TypeVar("T")
logger = logging.getLogger("toolcrib.access")
EVENT = "toolcrib_event"
"""The ``extra`` key a record's fields travel under."""

TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


def log_event(kind: str, member: str | None, operation: str, outcome: str, started: float) -> None:
    """Write one line: ``kind member operation outcome duration_ms``."""
    fields = {
        "event": kind,
        "member": member or "-",
        "operation": operation,
        "outcome": outcome,
        "duration_ms": round((time.perf_counter() - started) * 1000, 1),
    }
    text = " ".join(f"{k}={v}" for k, v in fields.items())
    logger.info(text, extra={EVENT: fields})


def _code_of(exc: BaseException) -> str:
    """The outcome of a call that raised: its in-band code; ``cancelled`` when the caller cancelled
    it (R-3.3), never ``internal_error`` for that."""
    if isinstance(exc, anyio.get_cancelled_exc_class()):
        return "cancelled"
    code = getattr(exc, "code", None)
    return code if isinstance(code, str) and code != "internal" else "internal_error"


async def traced(
    kind: str,
    member: str | None,
    operation: str,
    work: Awaitable[T],
    outcome_of: Callable[[T], str] | None = None,
) -> T:
    """Await ``work`` and log how it ended: ``ok`` (or ``outcome_of(result)``), or the error code."""
    started = time.perf_counter()
    try:
        result = await work
    except BaseException as exc:
        log_event(kind, member, operation, _code_of(exc), started)
        raise
    log_event(kind, member, operation, outcome_of(result) if outcome_of else "ok", started)
    return result


def shown_path(path: str, secret_paths: Sequence[str]) -> str:
    """``path`` as a log line or a span shows it: the segment after a prefix in ``secret_paths`` (the
    token of an upstream OAuth start link, #32) is ``***``."""
    for prefix in secret_paths:
        if path.startswith(prefix) and len(path) > len(prefix):
            _, slash, rest = path[len(prefix) :].partition("/")
            return f"{prefix}***{slash}{rest}"
    return path


class RequestLog:
    """ASGI middleware: one line per HTTP request, with the member the route authenticated.

    A path under one of ``secret_paths`` is logged with its secret segment as ``***``."""

    def __init__(self, app: Any, principal_key: str, secret_paths: Sequence[str] = ()) -> None:
        self._app = app
        self._key = principal_key
        self._secret_paths = tuple(secret_paths)

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self._app(scope, receive, send)
            return
        started, status = time.perf_counter(), [500]

        async def sending(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                status[0] = int(message["status"])
            await send(message)

        try:
            await self._app(scope, receive, sending)
        finally:
            principal = scope.get(self._key)
            member = getattr(principal, "member", None)
            path = shown_path(str(scope["path"]), self._secret_paths)
            log_event("request", member, f"{scope['method']} {path}", str(status[0]), started)


class JsonFormatter(logging.Formatter):
    """Every record as one JSON object: time, level, logger, message, and an event's fields."""

    def format(self, record: logging.LogRecord) -> str:
        out: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
        }
        fields = getattr(record, EVENT, None)
        if isinstance(fields, dict):
            out.update(fields)
        else:
            out["message"] = record.getMessage()
        if record.exc_info:
            out["exception"] = self.formatException(record.exc_info)
        return json.dumps(out, ensure_ascii=False, default=str)


DRIVER_LOGGERS = (
    "sqlalchemy",
    "aiosqlite",
    "psycopg",
    "asyncpg",
    "alembic",
    "httpx",
    "httpcore",
    "httpx2",
    "httpcore2",
)
"""Libraries whose INFO and DEBUG lines are their own working (every SQL statement of every poll,
every HTTP request of a session): kept at WARNING whatever the level (#32)."""


def configure(level: str, fmt: Literal["text", "json"]) -> None:
    """The process's logging: one handler on stderr, text or JSON lines."""
    handler = logging.StreamHandler()
    handler.setFormatter(JsonFormatter() if fmt == "json" else logging.Formatter(TEXT_FORMAT))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    # The drivers' INFO is SQLAlchemy's echo (a batch of statements every poll, #32) and their
    # DEBUG quotes every statement's bound values (tokens, sealed secrets, arguments, #21, with the
    # engines' hide_parameters): their warnings and errors only, whatever the level.
    for driver in DRIVER_LOGGERS:
        logging.getLogger(driver).setLevel(max(logging.WARNING, root.level))
