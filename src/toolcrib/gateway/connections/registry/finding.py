"""Finding servers in the registries (R-13.9): search, one entry, the newest version.

The MCP Registry API v0.1: ``GET /v0.1/servers?search=&limit=&cursor=&version=latest`` lists
entries ``{"server": <server.json>, "_meta": {...}}`` with ``metadata.nextCursor``;
``GET /v0.1/servers/{name}/versions/{version|latest}`` answers one. Each registry of
``registry_url`` is asked in order. An entry the registry marks ``deleted`` is never offered (a
registry that lists one anyway is not believed); ``deprecated`` ones are shown, marked. Each entry
is checked against the published schema and for unsafe identifiers (``catalog.server_json``); one
that fails is listed as not addable, with why.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, urlencode

import anyio

from toolcrib.addresses import AddressPolicy
from toolcrib.catalog.registry_launch import input_specs, launch_of
from toolcrib.catalog.sanitize import sanitize_text
from toolcrib.catalog.server_json import Entry, entry_of, split_reference
from toolcrib.errors import InBandError, InvalidArguments, NotFound, UpstreamError
from toolcrib.gateway.connections.registry.cache import Answer, RegistryCache
from toolcrib.gateway.connections.registry.fetch import get_json
from toolcrib.settings import Settings

__all__ = ["Found", "Reader", "entry_view", "find", "search"]

_MAX_PAGES = 5
_MAX_WORDS = 200


@dataclass(frozen=True, slots=True)
class Reader:
    """What reading the registries takes: the settings, the address policy, the cache, a clock."""

    settings: Settings
    addresses: AddressPolicy
    cache: RegistryCache
    clock: Callable[[], float]

    async def get(self, url: str) -> Answer:
        now = self.clock()
        held = self.cache.get(url, now, self.settings.registry_cache_seconds)
        if held is not None:
            return held
        answer = Answer(await get_json(url, addresses=self.addresses, settings=self.settings), now)
        self.cache.put(url, answer)
        return answer

    def age(self, answer: Answer) -> float:
        return round(max(0.0, self.clock() - answer.fetched_at), 1)


@dataclass(frozen=True, slots=True)
class Found:
    registry: str
    entry: Entry
    age_seconds: float


def _base(url: str) -> str:
    return url.rstrip("/")


def _items(body: Any) -> tuple[list[Any], str | None]:
    if not isinstance(body, dict) or not isinstance(body.get("servers"), list):
        raise UpstreamError("the registry's answer is not an API v0.1 server list")
    metadata = body.get("metadata")
    cursor = metadata.get("nextCursor") if isinstance(metadata, dict) else None
    return body["servers"], cursor if isinstance(cursor, str) and cursor else None


async def search(reader: Reader, words: str) -> dict[str, Any]:
    """Entries whose name matches ``words`` in every registry, the deleted ones left out."""
    words = " ".join(words.split())
    if not words or len(words) > _MAX_WORDS:
        raise InvalidArguments(
            f"search words: 1 to {_MAX_WORDS} characters",
            [{"pointer": "/words", "message": "empty or too long"}],
        )
    limit = reader.settings.registry_max_entries
    results: list[dict[str, Any]] = []
    registries: list[dict[str, Any]] = []
    failures: list[UpstreamError] = []
    for registry in reader.settings.registry_url:
        try:
            found, age = await _search_one(reader, _base(registry), words, limit)
        except UpstreamError as exc:  # one registry down does not hide the others' entries
            failures.append(exc)
            registries.append({"registry": _base(registry), "error": exc.message})
            continue
        registries.append({"registry": _base(registry), "entries": len(found), "age_seconds": age})
        results += [entry_view(Found(_base(registry), e, age)) for e in found]
    if failures and len(failures) == len(registries):
        raise failures[0]
    return {"query": words, "registries": registries, "servers": results}


async def _search_one(reader: Reader, base: str, words: str, limit: int) -> tuple[list[Entry], float]:
    found: list[Entry] = []
    cursor: str | None = None
    age = 0.0
    for _ in range(_MAX_PAGES):
        query = {"search": words, "limit": str(min(limit, 100)), "version": "latest"}
        if cursor:
            query["cursor"] = cursor
        answer = await reader.get(f"{base}/v0.1/servers?{urlencode(query)}")
        age = max(age, reader.age(answer))
        items, cursor = _items(answer.body)
        found += await anyio.to_thread.run_sync(_offered, items)  # schema checks: CPU, off the loop
        if cursor is None or len(found) >= limit:
            break
    return found[:limit], age


def _offered(items: list[Any]) -> list[Entry]:
    """The entries of a page that may be offered: checked, the deleted ones left out."""
    entries = (entry_of(item) for item in items)
    return [e for e in entries if e is not None and e.status != "deleted"]


async def find(reader: Reader, reference: str) -> Found:
    """``NAME[@VERSION]`` (the latest when no version) from the first registry that has it."""
    try:
        name, version = split_reference(reference)
    except ValueError as exc:
        raise InvalidArguments(str(exc), [{"pointer": "/from_registry", "message": str(exc)}]) from exc
    path = f"/v0.1/servers/{quote(name, safe='')}/versions/{quote(version or 'latest', safe='')}"
    for registry in reader.settings.registry_url:
        try:
            answer = await reader.get(_base(registry) + path)
        except NotFound:
            continue
        entry = await anyio.to_thread.run_sync(entry_of, answer.body)
        if entry is None or entry.name != name or (version and entry.version != version):
            raise UpstreamError("the registry answered an entry other than the one asked for")
        if entry.status == "deleted":
            break  # never offered, even by name
        return Found(_base(registry), entry, reader.age(answer))
    raise NotFound(f"no registry offers {reference!r}")


def entry_view(found: Found) -> dict[str, Any]:
    """What search and show answer of an entry: what it is, what it needs, whether it may be added."""
    entry, server = found.entry, found.entry.server
    view: dict[str, Any] = {
        "name": entry.name,
        "title": _text(server.get("title"), 100),
        "description": _text(server.get("description"), 300),
        "version": entry.version,
        "status": entry.status,
        "registry": found.registry,
        "age_seconds": found.age_seconds,
        "repository": (server.get("repository") or {}).get("url")
        if isinstance(server.get("repository"), dict)
        else None,
        "transports": _transports(server),
    }
    if entry.status == "deprecated":
        view["deprecated"] = entry.status_message or "the registry marks this entry deprecated"
    if entry.problems:
        view["addable"] = False
        view["problems"] = [p.as_error() for p in entry.problems]
        return view
    try:
        specs = input_specs(server)
        view["inputs"] = [spec.view() for spec in specs]
        view["addable"] = True
    except InvalidArguments as exc:
        view["addable"], view["problems"] = False, exc.errors
        return view
    view["runs"] = _runs(server, {s.key: f"<{s.key}>" for s in specs if s.required and s.default is None})
    return view


def _runs(server: dict[str, Any], placeholders: dict[str, str]) -> str | None:
    """What adding it would connect: the URL, or the command line after the runtime's name, the
    required inputs as ``<name>`` (the consent the schema asks for before running an entry)."""
    try:
        launch = launch_of(server, placeholders)
    except InBandError:
        return None
    if launch.url is not None:
        return launch.url
    if launch.registry_type == "pypi" and launch.file_sha256 is not None:  # its own checked venv
        spec, *args = launch.argv
        program = spec.partition("==")[0]
        installed = f"uv pip install {spec} --hash=sha256:{launch.file_sha256}"
        return f"{installed} (its own virtual environment), then " + shlex.join([program, *args])
    return shlex.join([str(launch.runtime), *launch.argv])


def _text(value: Any, limit: int) -> str | None:
    """A registry's free text as a face shows it: sanitized and bounded (it is someone else's)."""
    return sanitize_text(value, limit) if isinstance(value, str) else None


def _transports(server: dict[str, Any]) -> list[str]:
    out = [f"remote {r.get('type')}" for r in server.get("remotes") or [] if isinstance(r, dict)]
    for p in server.get("packages") or []:
        if isinstance(p, dict):
            out.append(f"{p.get('registryType')} {p.get('identifier')}@{p.get('version')}")
    return out
