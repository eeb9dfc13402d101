"""A connection's definition, checked whole before anything is saved (R-13, defence in depth).

The faces validate their inputs too; this is the gateway's own check, so a malformed definition
(a command holding a number, an env value that is an object, a name outside the label pattern)
never reaches the store, where it would break every listing. Every problem is reported at once,
as ``invalid_arguments`` with JSON pointers.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from toolcrib.errors import InvalidArguments

__all__ = ["Definition", "check_definition", "malformed"]

NAME = re.compile(r"^[a-z0-9][a-z0-9-]{0,39}$")
_MAX_ARGS = 64
_MAX_ARG = 4096
_MAX_CONNECTOR = 80
_MAX_URL = 2048
_MAX_PAIRS = 64
_MAX_PAIR_NAME = 256
_MAX_PAIR_VALUE = 16_384
_HEADER_NAME = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


@dataclass(frozen=True, slots=True)
class Definition:
    """A checked definition: exactly one of ``argv`` (stdio) and ``url`` (Streamable HTTP)."""

    name: str
    connector: str
    argv: list[str] | None
    url: str | None
    env: dict[str, str] = field(default_factory=dict)
    headers: dict[str, str] = field(default_factory=dict)
    oauth: dict[str, Any] | None = None
    """OAuth 2.1 at the upstream (#14): ``{}``, or a client registered by hand (``client_id``,
    ``client_secret``), the ``scope`` to ask for, and ``per_member`` (each member authorizes
    their own account at the provider)."""


_OAUTH_FIELDS = ("client_id", "client_secret", "scope", "per_member")


class _Problems:
    def __init__(self) -> None:
        self.errors: list[dict[str, str]] = []

    def add(self, pointer: str, message: str) -> None:
        self.errors.append({"pointer": pointer, "message": message})


def check_definition(
    name: Any,
    connector: Any,
    command: Any = None,
    url: Any = None,
    env: Any = None,
    headers: Any = None,
    oauth: Any = None,
) -> Definition:
    """The definition, or InvalidArguments naming every field that is wrong."""
    problems = _Problems()
    if not isinstance(name, str) or not NAME.match(name) or "__" in name:
        problems.add("/name", "must match ^[a-z0-9][a-z0-9-]{0,39}$ without '__'")
    if not isinstance(connector, str) or not connector.strip():
        problems.add("/connector", "a connector label is required")
    elif len(connector.strip()) > _MAX_CONNECTOR or _CONTROL.search(connector):
        problems.add("/connector", f"at most {_MAX_CONNECTOR} printable characters")
    if (command is None) == (url is None):
        problems.add("", "give exactly one of a command (stdio) or a URL (Streamable HTTP)")
    argv = _argv(command, problems) if command is not None else None
    checked_url = _url(url, problems) if url is not None else None
    env_map = _pairs(env, "/env", problems, header=False)
    header_map = _pairs(headers, "/headers", problems, header=True)
    oauth_map = _oauth(oauth, url is not None, problems)
    if problems.errors:
        detail = "; ".join(f"{e['pointer'] or '/'}: {e['message']}" for e in problems.errors)
        raise InvalidArguments(f"the connection definition is not valid: {detail}", problems.errors)
    assert isinstance(name, str)
    assert isinstance(connector, str)
    return Definition(name, connector.strip(), argv, checked_url, env_map, header_map, oauth_map)


def _oauth(oauth: Any, remote: bool, problems: _Problems) -> dict[str, Any] | None:
    """``None`` (static credentials), or the OAuth settings of a remote connection."""
    if oauth is None or oauth is False:
        return None
    if not remote:
        problems.add("/oauth", "OAuth is for a remote (URL) connection")
        return None
    if oauth is True:
        return {}
    if not isinstance(oauth, Mapping) or set(oauth) - set(_OAUTH_FIELDS):
        problems.add("/oauth", f"must be true or an object of {', '.join(_OAUTH_FIELDS)}")
        return None
    out: dict[str, Any] = {}
    for key, value in oauth.items():
        if value is None or value is False:
            continue
        if key == "per_member":
            if value is not True:
                problems.add("/oauth/per_member", "must be a boolean")
            else:
                out[key] = True
        elif not isinstance(value, str) or not value or len(value) > _MAX_ARG or _CONTROL.search(value):
            problems.add(f"/oauth/{key}", f"must be a string of at most {_MAX_ARG} printable characters")
        else:
            out[key] = value
    if "client_secret" in out and "client_id" not in out:
        problems.add("/oauth/client_secret", "a client secret needs its client_id")
    return out


def _argv(command: Any, problems: _Problems) -> list[str] | None:
    if isinstance(command, str):
        try:
            command = shlex.split(command)
        except ValueError as exc:
            problems.add("/command", f"cannot be split into words: {exc}")
            return None
    if not isinstance(command, list) or not command:
        problems.add("/command", "must be a non-empty list of strings (or one command line)")
        return None
    if len(command) > _MAX_ARGS:
        problems.add("/command", f"at most {_MAX_ARGS} words")
        return None
    before = len(problems.errors)
    for i, word in enumerate(command):
        if not isinstance(word, str):
            problems.add(f"/command/{i}", "must be a string")
        elif len(word) > _MAX_ARG or "\x00" in word:
            problems.add(f"/command/{i}", f"at most {_MAX_ARG} characters, no NUL")
    if isinstance(command[0], str) and not command[0].strip():
        problems.add("/command/0", "the program name is empty")
    return list(command) if len(problems.errors) == before else None


def _url(url: Any, problems: _Problems) -> str | None:
    if not isinstance(url, str) or len(url) > _MAX_URL or _CONTROL.search(url) or " " in url:
        problems.add("/url", f"must be a URL of at most {_MAX_URL} characters without spaces")
        return None
    try:
        parts = urlsplit(url)
        ok = parts.scheme in ("http", "https") and bool(parts.hostname)
        parts.port  # noqa: B018 - a bad port raises here
    except ValueError:
        ok = False
    if not ok:
        problems.add("/url", "must be an http(s) URL with a host")
        return None
    return url


def _pairs(pairs: Any, pointer: str, problems: _Problems, *, header: bool) -> dict[str, str]:
    if pairs is None:
        return {}
    if not isinstance(pairs, Mapping):
        problems.add(pointer, "must be an object of string names to string values")
        return {}
    if len(pairs) > _MAX_PAIRS:
        problems.add(pointer, f"at most {_MAX_PAIRS} entries")
        return {}
    out: dict[str, str] = {}
    for key, value in pairs.items():
        where = f"{pointer}/{_escape(str(key))}"
        if not _pair_name_ok(key, header=header):
            problems.add(where, "not a valid header name" if header else "not a valid variable name")
        elif not isinstance(value, str) or len(value) > _MAX_PAIR_VALUE:
            problems.add(where, f"must be a string of at most {_MAX_PAIR_VALUE} characters")
        elif "\x00" in value or (header and ("\r" in value or "\n" in value)):
            problems.add(where, "must not hold NUL or line breaks")
        else:
            out[key] = value
    return out


def _pair_name_ok(key: Any, *, header: bool) -> bool:
    if not isinstance(key, str) or not key or len(key) > _MAX_PAIR_NAME:
        return False
    if header:
        return bool(_HEADER_NAME.match(key))
    return "=" not in key and not _CONTROL.search(key)


def _escape(token: str) -> str:
    """A JSON-pointer reference token (RFC 6901)."""
    return token.replace("~", "~0").replace("/", "~1")[:_MAX_PAIR_NAME]


def malformed(transport: Any, command: Any, url: Any, connector: Any) -> str | None:
    """Why a stored connection row cannot be used or shown as it is, or None when it is sound.

    Rows written before the definition was checked (or by hand) may hold anything; a listing shows
    such a row as ``error`` with this reason instead of failing for everyone.
    """
    if not isinstance(connector, str):
        return "its connector label is not text"
    if transport == "stdio":
        if not isinstance(command, list) or not command or not all(isinstance(w, str) for w in command):
            return "its command is not a list of strings"
        return None
    if transport == "http":
        return None if isinstance(url, str) and url else "its URL is missing"
    return "its transport is unknown"
