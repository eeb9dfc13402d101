"""The ``toolcrib`` command line run inside the test process (typer's ``CliRunner``), #33.

A real ``toolcrib`` process costs a Python start-up and the gateway's imports, ~1-4 s a command on
a busy 2-core machine; the same command in process costs its own work only. ``run`` answers with
the ``subprocess.CompletedProcess`` a real process gives (arguments, exit code, stdout, stderr; a
traceback on stderr and exit code 1 for an uncaught exception), so the tests assert the same things
either way.

What a new process would start without is reset around each command: ``sys.argv`` (``--json``
errors read it), the working directory, the rich consoles' size (``COLUMNS``, ``LINES``), the
environment (``CliRunner``'s ``env``), the root logger (no handler, WARNING: a warning reaches
stderr through logging's last resort, as in a process), and the warning filters (Python's
defaults, not the suite's ``error``).

A command runs as a real process instead when it must or when in-process would not be the same:
``serve`` and ``quickstart`` (they serve until stopped), a caller not on the main thread or inside
a running event loop (``CliRunner`` swaps process-wide streams; the commands call ``anyio.run``),
an environment that turns tracing on (OpenTelemetry's global tracer provider is set once per
process), and every command when ``TOOLCRIB_TESTS_CLI=process`` (the whole suite then runs the
command line as processes, as before #33). Real-process smoke tests stay in each ``tests/cli``
file (``process=True``) and in ``tests/cli/test_cli_startup.py``.
"""

from __future__ import annotations

import asyncio
import logging
import os
import subprocess
import sys
import threading
import traceback
import warnings
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path

__all__ = ["in_process_allowed", "run"]

_SERVING = frozenset({"serve", "quickstart"})
_TRACING_PREFIXES = ("OTEL_", "TOOLCRIB_TRACE")


def in_process_allowed(argv: Sequence[str], env: Mapping[str, str | None]) -> bool:
    """Whether ``toolcrib ARGV`` under ``env`` runs in process exactly as it would as a process."""
    if os.environ.get("TOOLCRIB_TESTS_CLI", "") == "process":
        return False
    if argv and argv[0] in _SERVING:
        return False
    if threading.current_thread() is not threading.main_thread():
        return False
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        pass
    else:
        return False
    names = [*env, *os.environ]
    return not any(name.startswith(_TRACING_PREFIXES) for name in names)


def _size_consoles(env: Mapping[str, str | None]) -> None:
    """Give the command line's rich consoles the size a new process's would take from ``COLUMNS``
    and ``LINES`` (read once, when a console is made), or none fixed."""
    from rich.console import Console

    seen = {**os.environ, **env}
    columns, lines = seen.get("COLUMNS"), seen.get("LINES")
    for name, module in list(sys.modules.items()):
        if not name.startswith("toolcrib.cli"):
            continue
        for found in vars(module).values():
            # ``common.console`` is a LazyConsole: the Console it made at an earlier run is sized too
            value = found if isinstance(found, Console) else getattr(found, "_console", None)
            if isinstance(value, Console):
                value._width = int(columns) if columns and columns.isdigit() else None
                value._height = int(lines) if lines and lines.isdigit() else None


@contextmanager
def _as_a_new_process(argv: Sequence[str], cwd: Path) -> Iterator[None]:
    saved_argv, saved_cwd = sys.argv, os.getcwd()
    root = logging.getLogger()
    saved_handlers, saved_level = root.handlers[:], root.level
    sys.argv = ["toolcrib", *argv]
    os.chdir(cwd)
    root.handlers = []
    root.setLevel(logging.WARNING)
    try:
        with warnings.catch_warnings():
            warnings.resetwarnings()
            warnings.simplefilter("default")
            warnings.filterwarnings("ignore", category=DeprecationWarning)
            warnings.filterwarnings("ignore", category=PendingDeprecationWarning)
            warnings.filterwarnings("ignore", category=ImportWarning)
            warnings.filterwarnings("ignore", category=ResourceWarning)
            yield
    finally:
        root.handlers = saved_handlers
        root.setLevel(saved_level)
        os.chdir(saved_cwd)
        sys.argv = saved_argv


def run(
    command: Sequence[str], argv: Sequence[str], *, cwd: Path, env: Mapping[str, str | None]
) -> subprocess.CompletedProcess[str]:
    """``toolcrib ARGV`` in process, in ``cwd``, with ``env`` over this process's environment (a
    ``None`` value unsets); ``command`` is what the result names as its arguments."""
    from typer.testing import CliRunner

    from toolcrib.cli.main import app

    runner = CliRunner()
    _size_consoles(env)
    with _as_a_new_process(argv, cwd):
        result = runner.invoke(app, list(argv), env=dict(env), catch_exceptions=True)
    stderr = result.stderr
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        exc = result.exception
        stderr += "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    return subprocess.CompletedProcess(list(command), result.exit_code, result.stdout, stderr)
