"""A registry entry added as a connection in one step, and moved to a newer version (R-13.9).

The entry is checked before anything is saved or run, in this order: the organization's allow
list (``restricted``); the published schema and every identifier a plain name
(``invalid_arguments``, pointers under ``/server_json``); the inputs (``needs_input`` naming the
required ones not given; ``invalid_arguments`` for an unknown one or a secret that would land on
the command line); for a package, the runtime on this host (``invalid_arguments`` naming the
program that is missing), a digest for an OCI image when the organization requires one
(``restricted``), and ``fileSha256``: a PyPI package that declares one is installed by
``uv pip install`` into a virtual environment of the connection's own, its file checked first
(:mod:`.verified_env`; ``uvx`` checks no hash), after the checks of the stdio command it will be;
``npx`` and ``docker`` check no file hash we could hand them, so an npm or OCI entry that declares
one is refused rather than run unchecked (an OCI image is pinned by its digest instead). Then
:func:`manage.add_connection` does what it does for any connection:
the stdio rule (R-13.3: only the host's command line, or ``allow_remote_stdio``),
the restriction resolver, the address policy, the sealing of env and headers, the first sync.
"""

from __future__ import annotations

import fnmatch
import shutil
import sysconfig
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from toolcrib.catalog.registry_launch import Launch, input_specs, launch_of, pinned_by_digest
from toolcrib.catalog.sanitize import sanitize_text
from toolcrib.catalog.server_json import Entry
from toolcrib.errors import InvalidArguments, NotFound, Restricted
from toolcrib.gateway.audit.entries import record_admin_act
from toolcrib.gateway.connections import manage
from toolcrib.gateway.connections.registry import verified_env
from toolcrib.gateway.connections.registry.finding import Found, Reader, find
from toolcrib.gateway.core import Gateway
from toolcrib.policy.gates import Principal, require_operation
from toolcrib.settings import Settings
from toolcrib.store import catalog_allow
from toolcrib.store import connections as store
from toolcrib.store.connections import ConnectionRow

__all__ = [
    "add_from_registry",
    "check_allowed",
    "parse_inputs",
    "reader_of",
    "runtime_path",
    "updates",
    "upgrade",
]


def reader_of(gw: Gateway, registry: str | None = None) -> Reader:
    """The registries as ``gw`` reads them (the glue the faces call); only ``registry`` when it is
    one of them (a connection's newer versions come from the registry it was added from)."""
    settings = gw.settings
    if registry is not None and registry in [u.rstrip("/") for u in settings.registry_url]:
        settings = settings.model_copy(update={"registry_url": [registry]})
    return Reader(settings, gw.addresses, gw.registry_cache, gw.store.clock)


def parse_inputs(words: str | Sequence[str] | None) -> dict[str, str]:
    """``KEY=VALUE`` words (``--input``) as a mapping; a word without ``=`` is a bad argument."""
    if words is None:
        return {}
    items = [words] if isinstance(words, str) else list(words)
    out: dict[str, str] = {}
    for i, word in enumerate(items):
        key, sep, value = word.partition("=")
        if not sep or not key:
            raise InvalidArguments(
                "an input is KEY=VALUE", [{"pointer": f"/inputs/{i}", "message": "no '='"}]
            )
        out[key] = value
    return out


def check_allowed(settings: Settings, name: str, extra: Sequence[str] = ()) -> None:
    """The organization's allow list (settings, and the organization file's ``extra``): both empty
    allows all; otherwise the entry matches a pattern of one of them."""
    patterns = [*settings.registry_allow, *extra]
    if patterns and not any(fnmatch.fnmatchcase(name, p) for p in patterns):
        raise Restricted(f"{name!r} is not on the organization's list of registry entries that may be added")


def runtime_path(program: str) -> str | None:
    """Where ``program`` is on this host: on PATH, or beside this Python (``uv`` is a dependency
    of toolcrib, so ``uvx`` is installed with it even when that directory is not on PATH)."""
    found = shutil.which(program)
    if found:
        return found
    beside = Path(sysconfig.get_path("scripts")) / program
    return str(beside) if beside.is_file() else None


def _checked(found: Found) -> Entry:
    entry = found.entry
    if entry.problems:
        errors = [{"pointer": "/server_json" + p.pointer, "message": p.message} for p in entry.problems]
        detail = "; ".join(f"{e['pointer']}: {e['message']}" for e in errors[:3])
        raise InvalidArguments(f"the registry entry {entry.reference} is refused: {detail}", errors)
    return entry


def _command(settings: Settings, launch: Launch) -> list[str]:
    """The argv of a package launch: the runtime found on this host, then its words."""
    assert launch.runtime is not None
    if launch.file_sha256 is not None and launch.registry_type != "pypi":
        raise InvalidArguments(
            f"the entry declares a fileSha256, which {launch.runtime} cannot check before running it "
            f"({_UNCHECKED[str(launch.registry_type)]}): it is refused rather than run unchecked",
            [
                {
                    "pointer": f"/server_json{launch.at}/fileSha256",
                    "message": "cannot be verified by the runtime",
                }
            ],
        )
    if launch.registry_type == "oci" and settings.registry_require_digest and not pinned_by_digest(launch):
        raise Restricted("the organization requires OCI images pinned by digest (image@sha256:...)")
    program = runtime_path(launch.runtime)
    if program is None:
        raise InvalidArguments(
            f"{launch.runtime} is not installed on this host: it runs {launch.registry_type} packages",
            [{"pointer": "/from_registry", "message": f"runtime {launch.runtime} missing"}],
        )
    options = list(settings.registry_uvx_options) if launch.runtime == "uvx" else []
    return [program, *options, *launch.argv]


_UNCHECKED = {
    "npm": "npx checks the npm registry's own integrity field, no hash given to it",
    "oci": "an OCI image is pinned by its digest, IMAGE@sha256:..., which docker checks; publish it so",
}


async def _package_command(
    gw: Gateway, name: str, label: str, launch: Launch, actor: Principal, *, new: bool
) -> list[str]:
    """The argv of a package launch; for a PyPI entry with ``fileSha256``, its program in the
    connection's verified environment, prepared only after the checks its command must pass."""
    command = _command(gw.settings, launch)
    if launch.file_sha256 is None:
        return command
    uv = runtime_path("uv")
    if uv is None:
        raise InvalidArguments(
            "uv is not installed on this host: it checks the fileSha256 of pypi packages",
            [{"pointer": "/from_registry", "message": "runtime uv missing"}],
        )
    planned = verified_env.command_of(gw.settings, name, launch)
    await manage.check_stdio(gw, name, connector=label, command=planned, env=launch.env, actor=actor, new=new)
    return await verified_env.prepare(gw.settings, uv, name, launch)


async def add_from_registry(
    gw: Gateway,
    name: str,
    reference: str,
    *,
    inputs: Mapping[str, str],
    actor: Principal,
    connector: str | None = None,
    pinning: str = "accept",
    allow: Sequence[str] = (),
    oauth: bool | Mapping[str, Any] | None = None,
) -> ConnectionRow:
    """Add the registry entry ``reference`` (``NAME[@VERSION]``, the latest when no version) as
    the connection ``name``, its secret inputs sealed like any credential (R-13.3). ``oauth`` is
    for a remote that authorizes with OAuth 2.1 (#14), as ``add_connection`` takes it."""
    require_operation(actor, "connections:write", "create")
    found = await find(reader_of(gw), reference)
    check_allowed(gw.settings, found.entry.name, allow or await catalog_allow.read_allow(gw.store.db))
    entry = _checked(found)
    launch = launch_of(entry.server, inputs)
    label = connector or sanitize_text(entry.server.get("title") or entry.name, 80) or entry.name[:80]
    origin = {"registry": found.registry, "registry_name": entry.name, "registry_version": entry.version}
    if launch.url is not None:
        row = await manage.add_connection(
            gw,
            name,
            connector=label,
            url=launch.url,
            headers=launch.headers,
            oauth=oauth,
            actor=actor,
            pinning=pinning,
            origin=origin,
            registry_inputs=inputs,
        )
    else:
        command = await _package_command(gw, name, label, launch, actor, new=True)
        row = await manage.add_connection(
            gw,
            name,
            connector=label,
            oauth=oauth,  # refused for a command, as for any stdio connection
            command=command,
            env=launch.env,
            actor=actor,
            pinning=pinning,
            origin=origin,
            registry_inputs=inputs,
        )
    await record_admin_act(
        gw,
        member=actor.member,
        account=name,
        operation="connections__create",
        outcome="ok",
        error_code=None,
        target=f"from_registry {entry.reference}",
    )
    return row


async def updates(gw: Gateway, actor: Principal) -> list[dict[str, Any]]:
    """The connections added from a registry whose entry has a newer version there (never moved
    silently, R-13.9)."""
    require_operation(actor, "connections:read", "list")
    out: list[dict[str, Any]] = []
    for row in await manage.list_connections(gw, actor):
        if not row.registry_name or not row.registry_version:
            continue
        where = {"name": row.name, "server": row.registry_name, "version": row.registry_version}
        try:
            latest = await find(reader_of(gw, row.registry), row.registry_name)
        except NotFound:
            out.append({**where, "latest": None, "note": "no registry offers this entry any more"})
            continue
        if latest.entry.version != row.registry_version:
            out.append({**where, "latest": latest.entry.version, "registry": latest.registry})
    return out


async def upgrade(
    gw: Gateway,
    name: str,
    *,
    version: str | None,
    inputs: Mapping[str, str],
    actor: Principal,
    allow: Sequence[str] = (),
) -> ConnectionRow:
    """Move connection ``name`` to ``version`` of its registry entry (the latest when none): an
    explicit, audited act. Inputs not given again keep the connection's sealed env and header
    values of the same name; the new tools go through pinning as any changed tool (R-13.4)."""
    require_operation(actor, "connections:write", "update")
    current = await manage.get_connection(gw, name, actor)
    if not current.registry_name:
        raise InvalidArguments(
            "this connection was not added from a registry",
            [{"pointer": "/name", "message": "no registry entry"}],
        )
    reference = current.registry_name + (f"@{version}" if version else "")
    found = await find(reader_of(gw, current.registry), reference)
    check_allowed(gw.settings, found.entry.name, allow or await catalog_allow.read_allow(gw.store.db))
    entry = _checked(found)
    stored = await store.get_connection(gw.store.db, name)
    assert stored is not None
    sealed: dict[str, Any] = gw.store.box.open(stored.secrets) or {}
    kept = {**(sealed.get("registry_inputs") or {})}
    launch, merged = _launch_keeping(entry, inputs, kept)
    if launch.url is not None:
        row = await manage.update_connection(
            gw, name, url=launch.url, headers=launch.headers, actor=actor, registry_inputs=merged
        )
    else:
        command = await _package_command(gw, name, current.connector, launch, actor, new=False)
        row = await manage.update_connection(
            gw, name, command=command, env=launch.env, actor=actor, registry_inputs=merged
        )
    await store.update_connection(gw.store.db, name, registry=found.registry, registry_version=entry.version)
    await record_admin_act(
        gw,
        member=actor.member,
        account=name,
        operation="connectors__upgrade",
        outcome="ok",
        error_code=None,
        target=f"{current.registry_name}@{current.registry_version} -> {entry.version}",
    )
    fresh = await manage.get_connection(gw, name, actor)
    return fresh if fresh.registry_version == entry.version else row


def _launch_keeping(
    entry: Entry, inputs: Mapping[str, str], kept: Mapping[str, str]
) -> tuple[Launch, dict[str, str]]:
    """The launch with ``inputs``, an input not given again taken from those the connection was
    added with (sealed), when the new version still declares it."""
    declared = {spec.key for spec in input_specs(entry.server)}
    merged = {k: v for k, v in kept.items() if k in declared and isinstance(v, str)} | dict(inputs)
    return launch_of(entry.server, merged), merged
