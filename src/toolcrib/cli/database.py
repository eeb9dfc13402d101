"""Which database a command works on, found the same way by every command (#13).

``--database``, else ``TOOLCRIB_DATABASE_URL``, else the ``database_url`` of a ``toolcrib.toml``
(or ``TOOLCRIB_DATABASE_URL`` of a ``.env``) in the current directory, which ``toolcrib init`` and
``make run`` write. Nothing found is an error naming those places: no command but ``init`` ever
creates a database silently.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from toolcrib.errors import ConfigError

__all__ = ["CONFIG_FILE", "DEFAULT_DATABASE", "find_database", "remember_database", "require_database"]

CONFIG_FILE = "toolcrib.toml"
ENV_FILE = ".env"
ENV_VAR = "TOOLCRIB_DATABASE_URL"
DEFAULT_DATABASE = "sqlite:///toolcrib.db"
"""What ``toolcrib init`` creates when nothing names a database (and then records it)."""


def _from_toml(path: Path) -> str | None:
    import tomllib

    try:
        value = tomllib.loads(path.read_text(encoding="utf-8")).get("database_url")
    except (OSError, ValueError) as exc:
        raise ConfigError(f'{path} cannot be read as TOML: set database_url = "..."') from exc
    return value if isinstance(value, str) and value else None


def _from_env_file(path: Path) -> str | None:
    for line in path.read_text(encoding="utf-8").splitlines():
        key, sep, value = line.strip().removeprefix("export ").partition("=")
        if sep and key.strip() == ENV_VAR and value.strip():
            return value.strip().strip("'\"")
    return None


def find_database(explicit: str | None, cwd: Path | None = None) -> str | None:
    """The database URL, or ``None`` when nothing names one."""
    if explicit:
        return explicit
    if os.environ.get(ENV_VAR):
        return os.environ[ENV_VAR]
    here = cwd or Path.cwd()
    if (here / CONFIG_FILE).is_file() and (found := _from_toml(here / CONFIG_FILE)):
        return found
    if (here / ENV_FILE).is_file():
        return _from_env_file(here / ENV_FILE)
    return None


def require_database(explicit: str | None) -> str:
    """The database URL, or a :class:`ConfigError` saying where one is looked for."""
    found = find_database(explicit)
    if found is None:
        raise ConfigError(
            f"no database given: pass --database URL, set {ENV_VAR}, or run `toolcrib init` "
            f"(or `make run`), which writes {CONFIG_FILE} in this directory"
        )
    return found


def remember_database(url: str, cwd: Path | None = None) -> Path | None:
    """Write ``toolcrib.toml`` naming ``url`` unless one exists; the path written, if any."""
    path = (cwd or Path.cwd()) / CONFIG_FILE
    if path.exists():
        return None
    path.write_text(f"database_url = {json.dumps(url)}\n", encoding="utf-8")
    return path
