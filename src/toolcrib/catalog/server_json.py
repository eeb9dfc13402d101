"""A registry entry: one ``server.json`` and the registry's word on it (R-13.9), checked (pure).

The MCP Registry API v0.1 answers ``{"server": <server.json>, "_meta": {...}}`` per entry; the
registry's own metadata sits under ``_meta["io.modelcontextprotocol.registry/official"]``
(``status`` active / deprecated / deleted, ``isLatest``, ``publishedAt``, ``updatedAt``). The
``server.json`` is validated against the published schema, vendored with its date in its file
name (``registry_schema/``), by ``jsonschema`` with every remote ``$ref`` refused. Then every
identifier it would put on a command line is checked to be a plain name (:func:`unsafe_parts`),
before anything is offered, shown as addable, or run.

No I/O and no clock: the gateway fetches (``gateway.connections.registry``), this module judges.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib.resources import files
from typing import Any

from jsonschema import Draft7Validator
from referencing import Registry, Resource
from referencing.exceptions import NoSuchResource

from toolcrib.catalog.sanitize import sanitize_text

__all__ = [
    "OFFICIAL",
    "SCHEMA_FILE",
    "Entry",
    "Problem",
    "entry_of",
    "schema_problems",
    "split_reference",
    "unsafe_parts",
]

SCHEMA_FILE = "server.schema.2025-12-11.json"
"""The published ``server.json`` schema this gateway validates against (its date is its version)."""
OFFICIAL = "io.modelcontextprotocol.registry/official"
"""The ``_meta`` key under which a registry states an entry's status (API v0.1)."""
STATUSES = ("active", "deprecated", "deleted")

_MAX_ERRORS = 10
_SERVER_NAME = re.compile(r"^[a-zA-Z0-9.-]+/[a-zA-Z0-9._-]+$")
_VERSION = re.compile(r"^[A-Za-z0-9][A-Za-z0-9.+_-]{0,63}$")
_PYPI = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9._-]{0,198}[A-Za-z0-9])?$")
_NPM = re.compile(r"^(?:@[a-z0-9~][a-z0-9._~-]{0,100}/)?[a-z0-9~][a-z0-9._~-]{0,213}$")
_OCI = re.compile(
    r"^[a-z0-9]+(?:[._-][a-z0-9]+)*(?::[0-9]{1,5})?(?:/[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*)+"
    r"(?::[A-Za-z0-9_][A-Za-z0-9._-]{0,127})?(?:@sha256:[a-f0-9]{64})?$"
)
_FLAG = re.compile(r"^--?[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
_SHELL = re.compile(r"[;&|`$<>(){}\\\"'*?!\[\]\x00-\x1f\x7f\n\r]")
"""Characters a shell gives meaning to. Nothing here runs a shell, but a value holding one is not
a plain argument: a ``server.json`` carrying ``; rm -rf ~`` is refused, not passed along."""
_IDENTIFIERS = {"pypi": _PYPI, "npm": _NPM, "oci": _OCI}
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,127}$")
_STEERING = re.compile(
    r"^(LD_|DYLD_|PYTHON|UV_|PIP_|NODE_|NPM_|YARN_|COREPACK_|DOCKER_|BUILDKIT_|BASH_|GIT_|SSL_|"
    r"REQUESTS_CA|CURL_CA|(HTTPS?|ALL|NO|FTP)_PROXY$|(PATH|HOME|ENV|IFS|SHELL|TMPDIR|PWD|CDPATH|PERL5OPT|"
    r"PERL5LIB|RUBYOPT|JAVA_TOOL_OPTIONS|_JAVA_OPTIONS|XDG_CONFIG_HOME|XDG_CACHE_HOME)$)",
    re.IGNORECASE,
)
"""Environment variables that steer the runtime or the loader rather than the server: a registry
entry naming one could make ``uvx``/``npx``/``docker`` fetch another package or talk to another
daemon (``UV_INDEX_URL``, ``NPM_CONFIG_REGISTRY``, ``DOCKER_HOST``, a proxy), or load code
(``LD_PRELOAD``, ``NODE_OPTIONS``, ``PYTHONSTARTUP``). Such an entry is refused."""


@dataclass(frozen=True, slots=True)
class Problem:
    pointer: str
    message: str

    def as_error(self) -> dict[str, str]:
        return {"pointer": self.pointer, "message": self.message}


@dataclass(frozen=True, slots=True)
class Entry:
    """One version of one server as a registry lists it."""

    server: dict[str, Any]
    name: str
    version: str
    status: str = "active"
    is_latest: bool = False
    published_at: str | None = None
    status_message: str | None = None
    problems: tuple[Problem, ...] = field(default=())
    """Why it may not be added (schema failures, unsafe identifiers); empty when it may."""

    @property
    def reference(self) -> str:
        return f"{self.name}@{self.version}"


def _refuse_retrieval(uri: str) -> Resource[Any]:
    raise NoSuchResource(ref=uri)  # type: ignore[call-arg]  # attrs class; the stub hides its fields


@functools.cache
def _validator() -> Draft7Validator:
    text = files("toolcrib.catalog").joinpath("registry_schema", SCHEMA_FILE).read_text("utf-8")
    schema = json.loads(text)
    registry: Registry[Any] = Registry(retrieve=_refuse_retrieval)  # type: ignore[call-arg]
    return Draft7Validator(schema, registry=registry)


def _pointer(path: Any) -> str:
    return "".join(f"/{str(p).replace('~', '~0').replace('/', '~1')}" for p in path)


def schema_problems(server: Any) -> list[Problem]:
    """How ``server`` fails the published ``server.json`` schema (at most 10), or nothing."""
    found: list[Problem] = []
    try:
        for error in _validator().iter_errors(server):
            found.append(Problem(_pointer(error.absolute_path), sanitize_text(error.message, 200)))
            if len(found) >= _MAX_ERRORS:
                break
    except RecursionError:
        return [Problem("", "it nests too deeply to check")]
    return found


def entry_of(item: Any) -> Entry | None:
    """An API v0.1 list item ``{"server": ..., "_meta": ...}`` as an :class:`Entry`, its problems
    listed; ``None`` when it is not even an object with a named, versioned server."""
    if not isinstance(item, Mapping) or not isinstance(item.get("server"), Mapping):
        return None
    server = dict(item["server"])
    name, version = server.get("name"), server.get("version")
    if not isinstance(name, str) or not isinstance(version, str):
        return None
    meta = item.get("_meta")
    official = meta.get(OFFICIAL) if isinstance(meta, Mapping) else None
    official = official if isinstance(official, Mapping) else {}
    status = official.get("status", "active")
    problems = schema_problems(server)
    if not problems:
        problems = unsafe_parts(server)
    return Entry(
        server=server,
        name=name,
        version=version,
        status=status if status in STATUSES else "deleted",  # an unknown status is not offered
        is_latest=official.get("isLatest") is True,
        published_at=_text(official.get("publishedAt")),
        status_message=_text(official.get("statusMessage")),
        problems=tuple(problems),
    )


def _text(value: Any) -> str | None:
    return sanitize_text(value, 500) if isinstance(value, str) else None


def split_reference(reference: str) -> tuple[str, str | None]:
    """``NAME[@VERSION]`` -> (name, version or None). ValueError when either is not a plain name."""
    name, _, version = reference.partition("@")
    if not _SERVER_NAME.match(name) or ".." in name or len(name) > 200:
        raise ValueError("a server name is namespace/name (letters, digits, '.', '-', '_')")
    if version and (version == "latest" or not _VERSION.match(version)):
        raise ValueError("a version is one exact version (no range, no 'latest')")
    return name, version or None


def unsafe_parts(server: Mapping[str, Any]) -> list[Problem]:
    """Every identifier, version, flag or fixed argument that is not a plain name (R-13.9).

    Checked on every package, whichever is later chosen: an entry carrying a shell command
    anywhere is not offered as addable at all."""
    found: list[Problem] = []
    if ".." in str(server.get("name", "")):
        found.append(Problem("/name", "holds '..'"))
    for i, package in enumerate(server.get("packages") or []):
        found += _package_problems(f"/packages/{i}", package)
    return found


def _package_problems(at: str, package: Mapping[str, Any]) -> list[Problem]:
    found: list[Problem] = []
    kind = package.get("registryType")
    identifier = str(package.get("identifier", ""))
    pattern = _IDENTIFIERS.get(str(kind))
    if pattern is not None and (not pattern.match(identifier) or ".." in identifier):
        found.append(Problem(f"{at}/identifier", f"not a plain {kind} package name"))
    version = package.get("version")
    if version is not None and (not isinstance(version, str) or not _VERSION.match(version)):
        found.append(Problem(f"{at}/version", "not one exact version"))
    for group in ("packageArguments", "runtimeArguments"):
        for j, argument in enumerate(package.get(group) or []):
            found += _argument_problems(f"{at}/{group}/{j}", argument)
    for j, variable in enumerate(package.get("environmentVariables") or []):
        name = str(variable.get("name", ""))
        if not _ENV_NAME.match(name) or _STEERING.match(name):
            found.append(Problem(f"{at}/environmentVariables/{j}/name", "steers the runtime or the loader"))
        if not _plain_value(variable.get("value")) or not _plain_value(variable.get("default")):
            found.append(Problem(f"{at}/environmentVariables/{j}", "its value holds shell syntax"))
    return found


def _argument_problems(at: str, argument: Mapping[str, Any]) -> list[Problem]:
    found: list[Problem] = []
    if argument.get("type") == "named" and not _FLAG.match(str(argument.get("name", ""))):
        found.append(Problem(f"{at}/name", "not a plain --flag"))
    for key in ("value", "default"):
        value = argument.get(key)
        if not _plain_value(value):
            found.append(Problem(f"{at}/{key}", "holds shell syntax or a '..' path segment"))
        elif argument.get("type") == "positional" and isinstance(value, str) and value.startswith("-"):
            found.append(Problem(f"{at}/{key}", "a positional value that starts with '-' is an option"))
    return found


def _plain_value(value: Any) -> bool:
    """A fixed value may name ``{variables}`` (braces are the template's own) but nothing else a
    shell reads, and no ``..`` path segment."""
    if value is None:
        return True
    if not isinstance(value, str) or len(value) > 4096:
        return False
    bare = re.sub(r"\{[A-Za-z_][A-Za-z0-9_]*\}", "", value)
    return not _SHELL.search(bare) and ".." not in re.split(r"[/\\=,]", bare)
