"""The three uses of an organization file (#26), for every face: plan, apply, export.

Each takes the principal it acts for (the command line's Operator); the checks of every object
are the gateway functions' own (:mod:`.applying`).
"""

from __future__ import annotations

from collections.abc import Mapping

from toolcrib.errors import ConfigError
from toolcrib.gateway.core import Gateway
from toolcrib.gateway.identity.members import init_owner, operator_principal
from toolcrib.gateway.orgfile.applying import apply_changes, precheck
from toolcrib.gateway.orgfile.checks import Desired, Known, check_file
from toolcrib.gateway.orgfile.exporting import export_text
from toolcrib.gateway.orgfile.planning import Change, Note, notes, plan
from toolcrib.gateway.orgfile.state import read_current
from toolcrib.gateway.storage import Storage
from toolcrib.policy.gates import Operator, Principal
from toolcrib.policy.scopes import SCOPES
from toolcrib.store import members as member_store

__all__ = ["apply_and_note", "apply_file", "export_org", "plan_file", "principal_for_file", "waiting_notes"]


async def principal_for_file(storage: Storage, text: str, source: str, *, create_owner: bool) -> Principal:
    """Who applies a file: the Operator (the first active owner). On a database with no owner
    yet, the file's first owner becomes it when ``create_owner`` (``apply``; its token is
    created by ``toolcrib tokens create``), and ``plan`` reads as an owner not yet named."""
    listed = await member_store.list_members(storage.db)
    if any(m.role == "owner" and m.status == "active" for m in listed):
        return await operator_principal(storage)
    owner = _first_owner(text, source)
    if not create_owner:
        return Operator(member=owner or "", role="owner", scopes=SCOPES, grant_id="cli")
    if owner is None:
        raise ConfigError("no owner yet: list one in the file's members (role: owner) or run `toolcrib init`")
    await init_owner(storage, owner)
    return await operator_principal(storage)


def _first_owner(text: str, source: str) -> str | None:
    from toolcrib.gateway.orgfile.loading import load_text

    data, _ = load_text(text, source)
    members = data.get("members") if isinstance(data, dict) else None
    for m in members if isinstance(members, list) else []:
        if isinstance(m, dict) and m.get("role") == "owner" and isinstance(m.get("name"), str):
            return str(m["name"])
    return None


async def plan_file(
    gw: Gateway,
    actor: Principal,
    text: str,
    source: str,
    *,
    prune: bool = False,
    environ: Mapping[str, str] | None = None,
) -> tuple[Desired, list[Change]]:
    """The checked file and what applying it would change (nothing is changed)."""
    now = await read_current(gw, actor)
    known = Known(frozenset(now.connections), frozenset(now.members))
    desired = check_file(text, source, known, environ)
    changes = plan(desired, now, prune=prune, keep_members=frozenset({actor.member}))
    precheck(desired, changes)
    return desired, changes


async def apply_file(
    gw: Gateway,
    actor: Principal,
    text: str,
    source: str,
    *,
    prune: bool = False,
    environ: Mapping[str, str] | None = None,
) -> list[Change]:
    """Apply the file, all or nothing; the changes made."""
    return (await apply_and_note(gw, actor, text, source, prune=prune, environ=environ))[0]


async def apply_and_note(
    gw: Gateway,
    actor: Principal,
    text: str,
    source: str,
    *,
    prune: bool = False,
    environ: Mapping[str, str] | None = None,
) -> tuple[list[Change], list[Note]]:
    """Apply the file; the changes made, and what of it waits for a tool not listed (R-13.8)."""
    desired, changes = await plan_file(gw, actor, text, source, prune=prune, environ=environ)
    await apply_changes(gw, actor, desired, changes)
    return changes, await waiting_notes(gw, actor, desired)


async def waiting_notes(gw: Gateway, actor: Principal, desired: Desired) -> list[Note]:
    """What of the file waits for a tool its connection has not listed, or holds it (R-13.8)."""
    return notes(desired, await read_current(gw, actor))


async def export_org(gw: Gateway, actor: Principal) -> str:
    """The organization as a file, secrets as ``${env:…}`` references."""
    return export_text(await read_current(gw, actor))
