"""Applying an organization file (#26): all of it, or nothing.

Every change goes through the gateway function every face uses (``add_connection``,
``add_member``, ``add_restriction``, ``set_frozen``, ``set_approval_rule``, ``set_limit``,
``classify_tool``, ...), acting as the same principal (the command line's Operator), so it is
validated, sealed (R-13.3, R-9.2), announced to the other replicas (LISTEN/NOTIFY on PostgreSQL,
R-15.2) and checked for permission exactly as there.

**All or nothing, by validation first and compensation after.** Those functions each commit on
their own, and adding a connection starts and syncs an upstream server, which no database
transaction should span (it would hold SQLite's write lock, or a PostgreSQL transaction, for as
long as a server takes to start). So:

1. the whole file is checked before anything changes (:mod:`.checks`: shape, every object by the
   gateway's validators, every reference resolved, every account and member named known);
2. connections are created and updated first; then a frozen parameter is checked against its
   tool's schema where the connection lists the tool, still before any other object changes. A
   tool not listed (the server is down, pending authorization) is no error: a frozen value, a
   classification, a limit or a restriction naming it is stored, waiting for the tool, and
   enforced from the sync that brings it (R-13.8); applying never depends on an upstream;
3. every change made records its inverse; when any later step fails, the inverses run newest
   first (a created connection removed, an updated one put back as it was, a created member
   forgotten, a rule removed, a frozen value or a limit restored ...), and the error is raised.

Deletions (``--prune``) come last, connections last of all, so a failure rarely has a deletion to
undo. One administrative audit row per applied change names the operator and the object.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from toolcrib.catalog.server_json import split_reference
from toolcrib.errors import ToolcribError
from toolcrib.gateway.audit.entries import record_admin_act
from toolcrib.gateway.connections import manage as connections
from toolcrib.gateway.connections.registry import adding as registry
from toolcrib.gateway.core import Gateway
from toolcrib.gateway.governance import approvals, rate_limits, restrictions
from toolcrib.gateway.identity import members
from toolcrib.gateway.orgfile.checks import Desired
from toolcrib.gateway.orgfile.loading import FileError, Problem
from toolcrib.gateway.orgfile.planning import Change, argv_of, oauth_of
from toolcrib.gateway.orgfile.state import LiveConnection
from toolcrib.policy.frozen import unmet_frozen
from toolcrib.policy.gates import Principal
from toolcrib.store import catalog_allow
from toolcrib.store import members as member_store

__all__ = ["apply_changes", "precheck"]

logger = logging.getLogger(__name__)

Undo = Callable[[], Awaitable[object]]


@dataclass(slots=True)
class _Run:
    gw: Gateway
    actor: Principal
    undo: list[Undo] = field(default_factory=list)


def precheck(desired: Desired, changes: list[Change]) -> None:
    """What can be refused from the plan alone, before anything changes."""
    problems = [
        desired.marks.problem(c.path, "changes the connection's OAuth settings: remove it and apply again")
        for c in changes
        if c.kind == "connection" and c.extra.get("oauth_changed")
    ]
    problems += [
        desired.marks.problem(
            c.path, "moves between a registry entry and a command or URL: remove it and apply again"
        )
        for c in changes
        if c.kind == "connection" and c.extra.get("registry_switch")
    ]
    problems += [
        desired.marks.problem(
            (*c.path, "name"), f"{c.name!r} was a member and was removed: choose another name"
        )
        for c in changes
        if c.kind == "member" and c.extra.get("removed")
    ]
    if problems:
        raise FileError(desired.source, problems)


async def apply_changes(gw: Gateway, actor: Principal, desired: Desired, changes: list[Change]) -> None:
    """Make ``changes`` (``planning.plan``'s, in its order), or none of them."""
    precheck(desired, changes)
    run = _Run(gw, actor)
    try:
        allow = await _catalog_allow(run, desired, changes)
        for change in changes:
            if change.kind == "connection" and change.action != "delete":
                await _connection(run, change, allow)
        _catalog_check(gw, desired, changes)
        for change in changes:
            if change.kind != "catalog" and not (change.kind == "connection" and change.action != "delete"):
                await _STEPS[(change.kind, change.action)](run, change)
    except BaseException:
        await _compensate(run)
        raise
    for change in changes:
        await record_admin_act(
            gw,
            member=actor.member,
            account=_account_of(change),
            operation=f"org_apply:{change.action}:{change.kind}",
            outcome="ok",
            error_code=None,
            target=change.name[:200],
        )


async def _catalog_allow(run: _Run, desired: Desired, changes: list[Change]) -> list[str]:
    """The allow list of registry entries as the file sets it, written first (the file's
    connections are checked against it); the list in force when the file has no ``catalog``."""
    gw = run.gw
    for change in changes:
        if change.kind == "catalog":
            old: list[str] = change.current
            await catalog_allow.write_allow(gw.store.db, change.desired)
            run.undo.append(lambda old=old: catalog_allow.write_allow(gw.store.db, old))  # type: ignore[misc]
            return list(change.desired)
    return await catalog_allow.read_allow(gw.store.db)


async def _compensate(run: _Run) -> None:
    """Undo what this apply did, newest first; an undo that fails is logged and the rest go on."""
    for undo in reversed(run.undo):
        try:
            await undo()
        except (ToolcribError, OSError):
            logger.exception("apply: could not undo one change; the organization may differ from before")


def _account_of(change: Change) -> str:
    if change.kind in ("connection", "catalog"):
        return change.name
    return str(getattr(change.desired, "account", None) or "")


def _catalog_check(gw: Gateway, desired: Desired, changes: list[Change]) -> None:
    """Each parameter the file freezes is declared by its tool, where the connection lists the tool
    (now synced). A tool not listed (its server down, pending authorization, not started) is no
    error: what names it is stored and waits for it (R-13.8), so applying never depends on an
    upstream being reachable; a plan names it (``planning.notes``)."""
    problems: list[Problem] = []
    for change in changes:
        if change.action == "delete" or change.kind != "frozen":
            continue
        spec = change.desired
        stored = gw.catalog.tools.get(spec.account, {}).get(spec.tool)
        if stored is not None and unmet_frozen(stored.record.input_schema, [spec.parameter]):
            problems.append(
                desired.marks.problem(
                    (*change.path, "parameter"),
                    f"{spec.account}__{spec.tool} has no parameter {spec.parameter!r}",
                )
            )
    if problems:
        raise FileError(desired.source, problems)


async def _registry_connection(run: _Run, change: Change, allow: list[str]) -> None:
    """Add or move a connection the file takes from a registry entry (R-13.9): the file's allow
    list applies as the organization's."""
    gw, actor, spec = run.gw, run.actor, change.desired
    if change.action == "create":
        await registry.add_from_registry(
            gw,
            spec.name,
            spec.from_registry,
            inputs=spec.inputs,
            actor=actor,
            connector=spec.connector,
            pinning=spec.pinning,
            allow=allow,
        )
        run.undo.append(lambda: connections.remove_connection(gw, spec.name, actor))
        return
    live: LiveConnection = change.current
    _, version = split_reference(spec.from_registry)
    await registry.upgrade(gw, spec.name, version=version, inputs=spec.inputs, actor=actor, allow=allow)
    if live.row.pinning != spec.pinning:
        await connections.update_connection(gw, spec.name, actor=actor, pinning=spec.pinning)
    row = live.row
    run.undo.append(
        lambda: registry.upgrade(
            gw, row.name, version=row.registry_version, inputs=live.registry_inputs, actor=actor, allow=allow
        )
    )


async def _connection(run: _Run, change: Change, allow: list[str]) -> None:
    gw, actor, spec = run.gw, run.actor, change.desired
    if spec.from_registry is not None:
        await _registry_connection(run, change, allow)
        return
    if change.action == "create":
        await connections.add_connection(
            gw,
            spec.name,
            connector=spec.connector,
            command=argv_of(spec),
            url=spec.url,
            env=spec.env,
            headers=spec.headers,
            oauth=oauth_of(spec),
            actor=actor,
            pinning=spec.pinning,
        )
        run.undo.append(lambda: connections.remove_connection(gw, spec.name, actor))
        return
    live: LiveConnection = change.current
    await connections.update_connection(
        gw,
        spec.name,
        connector=spec.connector,
        command=argv_of(spec),
        url=spec.url,
        env=spec.env,
        headers=spec.headers,
        actor=actor,
        pinning=spec.pinning,
    )
    row = live.row
    run.undo.append(
        lambda: connections.update_connection(
            gw,
            row.name,
            connector=row.connector,
            command=row.command,
            url=live.url,
            env=live.env,
            headers=live.headers,
            actor=actor,
            pinning=row.pinning,
        )
    )


async def _connection_delete(run: _Run, change: Change) -> None:
    gw, actor, live = run.gw, run.actor, change.current
    row = live.row
    await connections.remove_connection(gw, row.name, actor)
    oauth = (
        None
        if row.auth is None
        else {**(live.oauth or {}), **({"per_member": True} if row.auth == "oauth_member" else {})}
    )
    run.undo.append(
        lambda: connections.add_connection(
            gw,
            row.name,
            connector=row.connector,
            command=row.command,
            url=live.url,
            env=live.env,
            headers=live.headers,
            oauth=oauth,
            actor=actor,
            pinning=row.pinning,
            origin={k: str(getattr(row, k)) for k in ("registry", "registry_name", "registry_version")}
            if row.registry_name
            else None,  # a connection from a registry comes back as one
            registry_inputs=live.registry_inputs,
        )
    )


async def _member_create(run: _Run, change: Change) -> None:
    gw, actor, spec = run.gw, run.actor, change.desired
    await members.add_member(gw.store, spec.name, spec.role, actor)
    run.undo.append(lambda: member_store.delete_new_member(gw.store.db, spec.name))


async def _member_update(run: _Run, change: Change) -> None:
    gw, actor, spec, had = run.gw, run.actor, change.desired, change.current
    await members.set_role(gw.store, spec.name, spec.role, actor)
    run.undo.append(lambda: members.set_role(gw.store, spec.name, had.role, actor))


async def _member_delete(run: _Run, change: Change) -> None:
    gw, actor, had = run.gw, run.actor, change.current
    await members.remove_member(gw.store, had.name, actor)
    run.undo.append(lambda: member_store.update_member(gw.store.db, had.name, status=had.status))


async def _restriction_create(run: _Run, change: Change) -> None:
    gw, actor, r = run.gw, run.actor, change.desired
    kind, target = ("role", r.role) if r.role is not None else ("user", r.user)
    rule = await restrictions.add_restriction(
        gw.store,
        effect=r.effect,
        target_kind=kind,
        target=target,
        connector=r.connector,
        account=r.account,
        tool=r.tool,
        actor=actor,
    )
    run.undo.append(lambda: restrictions.remove_restriction(gw.store, rule.id, actor))


async def _restriction_delete(run: _Run, change: Change) -> None:
    gw, actor, rule = run.gw, run.actor, change.current
    await restrictions.remove_restriction(gw.store, rule.id, actor)
    run.undo.append(
        lambda: restrictions.add_restriction(
            gw.store,
            effect=rule.effect,
            target_kind=rule.target_kind,
            target=rule.target,
            connector=rule.connector,
            account=rule.account,
            tool=rule.tool,
            actor=actor,
        )
    )


async def _frozen_set(run: _Run, change: Change) -> None:
    gw, actor, f = run.gw, run.actor, change.desired
    await restrictions.set_frozen(
        gw, actor, f.account, f.tool, f.parameter, f.value, secret=change.extra["secret"]
    )
    if change.current is None:
        run.undo.append(lambda: restrictions.unset_frozen(gw, actor, f.account, f.tool, f.parameter))
    else:
        old_value, old_secret = change.current
        run.undo.append(
            lambda: restrictions.set_frozen(gw, actor, f.account, f.tool, f.parameter, old_value, old_secret)
        )


async def _frozen_delete(run: _Run, change: Change) -> None:
    gw, actor = run.gw, run.actor
    (account, tool, param), (value, secret) = change.current
    await restrictions.unset_frozen(gw, actor, account, tool, param)
    run.undo.append(lambda: restrictions.set_frozen(gw, actor, account, tool, param, value, secret))


async def _approval_create(run: _Run, change: Change) -> None:
    gw, actor, a = run.gw, run.actor, change.desired
    await approvals.set_approval_rule(gw, a.risk, account=a.account, role=a.role, actor=actor)
    run.undo.append(
        lambda: approvals.set_approval_rule(
            gw, a.risk, account=a.account, role=a.role, required=False, actor=actor
        )
    )


async def _approval_delete(run: _Run, change: Change) -> None:
    gw, actor, a = run.gw, run.actor, change.current
    await approvals.set_approval_rule(
        gw, a.classification, account=a.account, role=a.role, required=False, actor=actor
    )
    run.undo.append(
        lambda: approvals.set_approval_rule(gw, a.classification, account=a.account, role=a.role, actor=actor)
    )


def _limit_args(x: Any) -> dict[str, Any]:
    return {k: getattr(x, k) for k in ("member", "role", "account", "tool", "per_minute", "per_day")}


async def _limit_set(run: _Run, change: Change) -> None:
    gw, actor = run.gw, run.actor
    rule = await rate_limits.set_limit(gw, actor, **_limit_args(change.desired))
    old = change.current
    if old is None:
        run.undo.append(lambda: rate_limits.remove_limit(gw, actor, rule.id))
    else:
        run.undo.append(lambda: rate_limits.set_limit(gw, actor, **_limit_args(old)))


async def _limit_delete(run: _Run, change: Change) -> None:
    gw, actor, old = run.gw, run.actor, change.current
    await rate_limits.remove_limit(gw, actor, old.id)
    run.undo.append(lambda: rate_limits.set_limit(gw, actor, **_limit_args(old)))


async def _classification_set(run: _Run, change: Change) -> None:
    gw, actor, c, old = run.gw, run.actor, change.desired, change.current
    await restrictions.classify_tool(gw, c.account, c.tool, c.risk, actor)
    if old is None:
        run.undo.append(lambda: restrictions.unclassify_tool(gw, c.account, c.tool, actor))
    else:
        run.undo.append(lambda: restrictions.classify_tool(gw, c.account, c.tool, old, actor))


async def _classification_delete(run: _Run, change: Change) -> None:
    gw, actor = run.gw, run.actor
    (account, tool), risk = change.current
    await restrictions.unclassify_tool(gw, account, tool, actor)
    run.undo.append(lambda: restrictions.classify_tool(gw, account, tool, risk, actor))


_STEPS: dict[tuple[str, str], Callable[[_Run, Change], Awaitable[None]]] = {
    ("connection", "delete"): _connection_delete,
    ("member", "create"): _member_create,
    ("member", "update"): _member_update,
    ("member", "delete"): _member_delete,
    ("restriction", "create"): _restriction_create,
    ("restriction", "delete"): _restriction_delete,
    ("frozen", "create"): _frozen_set,
    ("frozen", "update"): _frozen_set,
    ("frozen", "delete"): _frozen_delete,
    ("approval", "create"): _approval_create,
    ("approval", "delete"): _approval_delete,
    ("limit", "create"): _limit_set,
    ("limit", "update"): _limit_set,
    ("limit", "delete"): _limit_delete,
    ("classification", "create"): _classification_set,
    ("classification", "update"): _classification_set,
    ("classification", "delete"): _classification_delete,
}
