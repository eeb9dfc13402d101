"""The int8-rewritten model kept on disk between starts, so that a normal start does not import onnx.

Rewriting the packaged model (:mod:`toolcrib.search.int8`) imports onnx and takes seconds, and its
result depends only on the model's bytes and on the rewrite. So the first load writes the result to
the user's cache folder (``$XDG_CACHE_HOME/toolcrib``, else ``~/.cache/toolcrib``: a cache, which
deleting only costs the next start those seconds) under a name made of the model's digest and the
rewrite's version, and later loads read it back instead.

The file is written under a temporary name and renamed, so no reader sees half of it (the worker
processes of one ``serve`` start together), and it is loaded only when its bytes have the digest
pinned in code: a corrupt, truncated or foreign file is rebuilt and replaced, never loaded. Where
the folder cannot be written (a read-only home), the model is rewritten at every load, as before.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import tempfile
from collections.abc import Callable
from pathlib import Path

__all__ = ["cache_folder", "cached"]

logger = logging.getLogger(__name__)

MAX_BYTES = 128 * 1024 * 1024
"""A cached file larger than this is not read at all (the rewritten model is ~23 MB)."""


def cache_folder() -> Path:
    """Where toolcrib keeps files it can always rebuild: ``$XDG_CACHE_HOME/toolcrib``, else
    ``~/.cache/toolcrib`` (the XDG base directory convention)."""
    base = os.environ.get("XDG_CACHE_HOME") or ""
    return (Path(base) if Path(base).is_absolute() else Path.home() / ".cache") / "toolcrib"


def cached(path: Path, sha256: str, build: Callable[[], bytes]) -> bytes:
    """The bytes of ``path`` when they have the digest ``sha256``; otherwise ``build()``'s, written
    to ``path`` for the next call when they have that digest (else returned, and not kept)."""
    found = _read(path)
    if found is not None:
        if hashlib.sha256(found).hexdigest() == sha256:
            return found
        logger.warning("%s does not hold what it should (corrupt or foreign): rebuilding it", path)
    data = build()
    if hashlib.sha256(data).hexdigest() != sha256:
        logger.warning("the rebuilt %s differs from its pinned digest: used, not cached", path.name)
        return data
    _write(path, data)
    return data


def _read(path: Path) -> bytes | None:
    try:
        if path.stat().st_size > MAX_BYTES:
            return None
        return path.read_bytes()
    except OSError:  # absent, unreadable, not a file: rebuilt
        return None


def _write(path: Path, data: bytes) -> None:
    """``data`` to ``path`` through a temporary file in the same folder and a rename."""
    temporary: str | None = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".partial")
        with os.fdopen(handle, "wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        os.replace(temporary, path)
        temporary = None
    except OSError as exc:
        logger.warning("cannot cache %s (%s): it is rebuilt at every load", path, exc.strerror or exc)
    finally:
        if temporary is not None:
            with contextlib.suppress(OSError):
                os.unlink(temporary)
