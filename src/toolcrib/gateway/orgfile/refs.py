"""Secrets by reference in an organization file (#26): ``${env:NAME}`` and ``${file:/path}``.

A file reviewed in git never holds a credential: it names where the credential is, and the
reference is resolved at apply time, on the host that applies it (an environment variable, or a
Kubernetes Secret mounted as a file). The resolved value is then handled like any credential:
sealed at rest by the gateway function that stores it (R-13.3, R-9.2), compared by value only
inside the gateway (a plan says ``(changed)``, never the value). A reference that cannot be
resolved is an error naming it, found before anything changes.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

__all__ = ["MAX_SECRET_FILE", "REFERENCE", "has_reference", "resolve"]

REFERENCE = re.compile(r"\$\{(env|file):([^}]{1,1024})\}")
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,255}$")
MAX_SECRET_FILE = 64 * 1024
"""A secret file is read up to this many bytes (a mounted token, a key: never a large file)."""


class Unresolved(ValueError):
    """A reference that names nothing there: its text says which, never a value."""


def has_reference(value: Any) -> bool:
    """Whether ``value`` (a string, or JSON holding strings) carries a reference."""
    if isinstance(value, str):
        return REFERENCE.search(value) is not None
    if isinstance(value, Mapping):
        return any(has_reference(v) for v in value.values())
    if isinstance(value, list):
        return any(has_reference(v) for v in value)
    return False


def resolve(value: Any, environ: Mapping[str, str] | None = None) -> Any:
    """``value`` with every reference replaced by what it names (strings inside JSON too), or
    :class:`Unresolved`. A whole-string reference to a file is its text without the trailing
    line break that ``echo`` and most secret stores add."""
    env = os.environ if environ is None else environ
    if isinstance(value, str):
        return REFERENCE.sub(lambda m: _one(m.group(1), m.group(2), env), value)
    if isinstance(value, Mapping):
        return {k: resolve(v, env) for k, v in value.items()}
    if isinstance(value, list):
        return [resolve(v, env) for v in value]
    return value


def _one(kind: str, name: str, env: Mapping[str, str]) -> str:
    if kind == "env":
        if not _ENV_NAME.match(name):
            raise Unresolved(f"${{env:{name}}} is not a valid variable name")
        if name not in env:
            raise Unresolved(f"the environment variable {name} (${{env:{name}}}) is not set")
        return env[name]
    path = Path(name)
    if not path.is_absolute():
        raise Unresolved(f"${{file:{name}}} must name an absolute path")
    try:
        with path.open("rb") as fh:
            data = fh.read(MAX_SECRET_FILE + 1)
    except OSError as exc:
        raise Unresolved(f"the file {name} (${{file:{name}}}) cannot be read ({exc.strerror})") from exc
    if len(data) > MAX_SECRET_FILE:
        raise Unresolved(f"the file {name} is over {MAX_SECRET_FILE} bytes")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise Unresolved(f"the file {name} is not UTF-8 text") from exc
    return text.removesuffix("\n").removesuffix("\r")
