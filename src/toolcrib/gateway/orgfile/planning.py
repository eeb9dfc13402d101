"""What applying a file would change (#26): one :class:`Change` per object created, updated or
deleted, compared with the organization as stored (:mod:`.state`).

Objects are matched by what names them: a connection and a member by name, a frozen value by
account, tool and parameter, a limit by member, role, account and tool, a classification by
account and tool; a restriction and an approval rule have no name and are matched whole (a changed
rule is the old one deleted and the new one created). Deletions are planned only with ``prune``.

A secret (a connection's env or header value, an OAuth client secret, a secret frozen value) is
compared by its value inside the gateway and shown as ``(changed)``, never by its value.

Policy the file writes for a tool its connection has not listed (its server is down, pending
authorization, not started) is no change and no error: it is stored and waits for the tool
(R-13.8). :func:`notes` names each such object (``waiting for the tool``), and each frozen value
whose tool is listed without its parameter (``held``: the tool does not run), so a plan shows them
and still exits 0 when nothing else differs.
"""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass, field
from typing import Any

from toolcrib.gateway.connections.url_secrets import public_url
from toolcrib.gateway.orgfile.checks import Desired
from toolcrib.gateway.orgfile.loading import Path
from toolcrib.gateway.orgfile.models import ConnectionSpec
from toolcrib.gateway.orgfile.state import Current, LiveConnection, approval_key, limit_key, rule_key
from toolcrib.policy.frozen import ACTIVE, WAITING, frozen_status

__all__ = ["Change", "Note", "notes", "plan"]

CHANGED = "(changed)"


@dataclass(frozen=True, slots=True)
class Change:
    """One object to create, update or delete; ``details`` never hold a secret's value."""

    kind: str
    action: str
    name: str
    details: tuple[str, ...] = ()
    path: Path = ()
    """Where the file writes the object (none for a deletion)."""
    desired: Any = None
    current: Any = None
    extra: dict[str, Any] = field(default_factory=dict)

    def line(self) -> str:
        sign = {"create": "+", "update": "~", "delete": "-"}[self.action]
        shown = f"{sign} {self.action} {self.kind} {self.name}"
        return shown + "".join(f"\n    {d}" for d in self.details)

    def view(self) -> dict[str, Any]:
        return {"kind": self.kind, "action": self.action, "name": self.name, "details": list(self.details)}


@dataclass(frozen=True, slots=True)
class Note:
    """An object of the file that waits for its tool, or holds it (R-13.8): not a change."""

    kind: str
    name: str
    status: str

    def line(self) -> str:
        return f"  {self.kind} {self.name}: {self.status}"

    def view(self) -> dict[str, str]:
        return {"kind": self.kind, "name": self.name, "status": self.status}


def notes(desired: Desired, now: Current) -> list[Note]:
    """Each object of the file naming a tool not listed now, or a parameter its tool lacks."""
    org = desired.org

    def waiting(account: str | None, tool: str | None) -> bool:
        exact = tool is not None and not set("*?[") & set(tool)
        return account is not None and exact and (account, tool) not in now.tools

    found = [
        Note("frozen", f"{f.account}__{f.tool}.{f.parameter}", status)
        for f in org.frozen
        if (status := frozen_status(now.tools.get((f.account, f.tool)), f.parameter)) != ACTIVE
    ]
    found += [
        Note("restriction", _rule_name(_file_rule_key(r)), WAITING)
        for r in org.restrictions
        if waiting(r.account, r.tool)
    ]
    found += [
        Note("limit", _limit_name(limit_key(x.member, x.role, x.account, x.tool)), WAITING)
        for x in org.limits
        if waiting(x.account, x.tool)
    ]
    found += [
        Note("classification", f"{c.account}__{c.tool}", WAITING)
        for c in org.classifications
        if waiting(c.account, c.tool)
    ]
    return found


def _file_rule_key(r: Any) -> tuple[str | None, ...]:
    kind, target = ("role", r.role) if r.role is not None else ("user", r.user)
    return rule_key(r.effect, kind, str(target), r.connector, r.account, r.tool)


def plan(
    desired: Desired, now: Current, *, prune: bool, keep_members: frozenset[str] = frozenset()
) -> list[Change]:
    """The changes, in the order ``apply`` makes them: creations and updates section by section
    (connections first: the rest may name them), then, with ``prune``, deletions (of rules first,
    members and connections last). ``keep_members`` are never deleted (the operator applying)."""
    sections = (
        _connections(desired, now),
        _members(desired, now, keep_members),
        _restrictions(desired, now),
        _frozen(desired, now),
        _approvals(desired, now),
        _limits(desired, now),
        _classifications(desired, now),
        _catalog(desired, now),
    )
    made = [c for section in sections for c in section[0]]
    if not prune:
        return made
    order = ("limit", "approval", "frozen", "classification", "restriction", "member", "connection")
    gone = sorted((c for section in sections for c in section[1]), key=lambda c: order.index(c.kind))
    return made + gone


_Section = tuple[list[Change], list[Change]]
"""The creations and updates of one section, and what ``prune`` would delete."""


def _connections(desired: Desired, now: Current) -> _Section:
    made = [
        change
        for i, c in enumerate(desired.org.connections)
        for change in _connection(c, now.connections.get(c.name), ("connections", i))
    ]
    in_file = {c.name for c in desired.org.connections}
    gone = [
        Change("connection", "delete", n, current=c) for n, c in now.connections.items() if n not in in_file
    ]
    return made, gone


def _members(desired: Desired, now: Current, keep: frozenset[str]) -> _Section:
    made = []
    for i, m in enumerate(desired.org.members):
        had = now.members.get(m.name)
        if had is None:
            gone = {"removed": True} if m.name in now.removed_members else {}
            made.append(
                Change("member", "create", m.name, (f"role: {m.role}",), ("members", i), m, extra=gone)
            )
        elif had.role != m.role:
            details = (f"role: {had.role} -> {m.role}",)
            made.append(Change("member", "update", m.name, details, ("members", i), m, had))
    in_file = {m.name for m in desired.org.members}
    deleted = [
        Change("member", "delete", n, current=m) for n, m in now.members.items() if n not in in_file | keep
    ]
    return made, deleted


def _restrictions(desired: Desired, now: Current) -> _Section:
    stored = {
        rule_key(r.effect, r.target_kind, r.target, r.connector, r.account, r.tool): r
        for r in now.restrictions
    }
    wanted = set()
    made = []
    for i, r in enumerate(desired.org.restrictions):
        key = _file_rule_key(r)
        wanted.add(key)
        if key not in stored:
            made.append(Change("restriction", "create", _rule_name(key), (), ("restrictions", i), r))
    gone = [
        Change("restriction", "delete", _rule_name(k), current=r)
        for k, r in stored.items()
        if k not in wanted
    ]
    return made, gone


def _frozen(desired: Desired, now: Current) -> _Section:
    made = []
    for i, f in enumerate(desired.org.frozen):
        secret = desired.frozen_secret[i]
        had = now.frozen.get((f.account, f.tool, f.parameter))
        name = f"{f.account}__{f.tool}.{f.parameter}"
        shown = f"value: {CHANGED if secret else json.dumps(f.value)}"
        if had is None:
            made.append(
                Change("frozen", "create", name, (shown,), ("frozen", i), f, extra={"secret": secret})
            )
        elif had != (f.value, secret):
            details = [shown] if had[0] != f.value else []
            if had[1] != secret:
                details.append(f"secret: {had[1]} -> {secret}")
            made.append(
                Change("frozen", "update", name, tuple(details), ("frozen", i), f, had, {"secret": secret})
            )
    wanted = {(f.account, f.tool, f.parameter) for f in desired.org.frozen}
    gone = [
        Change("frozen", "delete", f"{k[0]}__{k[1]}.{k[2]}", current=(k, v))
        for k, v in now.frozen.items()
        if k not in wanted
    ]
    return made, gone


def _approvals(desired: Desired, now: Current) -> _Section:
    stored = {approval_key(a.classification, a.account, a.role): a for a in now.approvals}
    keyed = [(i, a, approval_key(a.risk, a.account, a.role)) for i, a in enumerate(desired.org.approvals)]
    made = [
        Change("approval", "create", _approval_name(k), (), ("approvals", i), a)
        for i, a, k in keyed
        if k not in stored
    ]
    wanted = {k for _, _, k in keyed}
    gone = [
        Change("approval", "delete", _approval_name(k), current=a)
        for k, a in stored.items()
        if k not in wanted
    ]
    return made, gone


def _limits(desired: Desired, now: Current) -> _Section:
    stored = {limit_key(x.member, x.role, x.account, x.tool): x for x in now.limits}
    wanted = set()
    made = []
    for i, lim in enumerate(desired.org.limits):
        key = limit_key(lim.member, lim.role, lim.account, lim.tool)
        wanted.add(key)
        had = stored.get(key)
        counts = _counts(lim)
        if had is None:
            made.append(Change("limit", "create", _limit_name(key), (counts,), ("limits", i), lim))
        elif (had.per_minute, had.per_day) != (lim.per_minute, lim.per_day):
            details = (f"{_counts(had)} -> {counts}",)
            made.append(Change("limit", "update", _limit_name(key), details, ("limits", i), lim, had))
    gone = [
        Change("limit", "delete", _limit_name(k), current=x) for k, x in stored.items() if k not in wanted
    ]
    return made, gone


def _counts(rule: Any) -> str:
    """``per_minute: 60, per_day: 900`` (the counts a limit sets)."""
    return ", ".join(
        f"{k}: {getattr(rule, k)}" for k in ("per_minute", "per_day") if getattr(rule, k) is not None
    )


def _classifications(desired: Desired, now: Current) -> _Section:
    made = []
    for i, cl in enumerate(desired.org.classifications):
        had = now.classifications.get((cl.account, cl.tool))
        if had != cl.risk:
            action, detail = (
                ("create", f"risk: {cl.risk}") if had is None else ("update", f"risk: {had} -> {cl.risk}")
            )
            name = f"{cl.account}__{cl.tool}"
            made.append(Change("classification", action, name, (detail,), ("classifications", i), cl, had))
    wanted = {(cl.account, cl.tool) for cl in desired.org.classifications}
    gone = [
        Change("classification", "delete", f"{k[0]}__{k[1]}", current=(k, v))
        for k, v in now.classifications.items()
        if k not in wanted
    ]
    return made, gone


def _catalog(desired: Desired, now: Current) -> _Section:
    """The allow list of registry entries (R-13.9): a file without ``catalog`` leaves it alone."""
    wanted = desired.org.catalog
    if wanted is None or list(wanted.allow) == now.catalog_allow:
        return [], []
    detail = f"allow: {', '.join(now.catalog_allow) or '(any)'} -> {', '.join(wanted.allow) or '(any)'}"
    return [
        Change("catalog", "update", "allow", (detail,), ("catalog",), list(wanted.allow), now.catalog_allow)
    ], []


def _registry_connection(spec: ConnectionSpec, live: LiveConnection | None, path: Path) -> list[Change]:
    """A connection the file takes from a registry entry (R-13.9): its reference and inputs."""
    inputs = [f"inputs.{k}: {CHANGED}" for k in spec.inputs]
    if live is None:
        details = [f"from_registry: {spec.from_registry}", *inputs]
        return [Change("connection", "create", spec.name, tuple(details), path, spec)]
    details = []
    if live.from_registry != spec.from_registry:
        details.append(f"from_registry: {live.from_registry or '(none)'} -> {spec.from_registry}")
    details += _secret_pairs("inputs", live.registry_inputs, dict(spec.inputs))
    if live.row.pinning != spec.pinning:
        details.append(f"pinning: {live.row.pinning} -> {spec.pinning}")
    if not details:
        return []
    switch = live.from_registry is None
    return [
        Change(
            "connection", "update", spec.name, tuple(details), path, spec, live, {"registry_switch": switch}
        )
    ]


def argv_of(spec: ConnectionSpec) -> list[str] | None:
    if spec.command is None:
        return None
    return shlex.split(spec.command) if isinstance(spec.command, str) else list(spec.command)


def oauth_of(spec: ConnectionSpec) -> dict[str, Any] | None:
    """The ``oauth`` argument of ``add_connection`` the spec asks for."""
    if spec.oauth is None or spec.oauth is False:
        return None
    if spec.oauth is True:
        return {}
    return spec.oauth.model_dump(exclude_none=True, exclude_defaults=True)


def _connection(spec: ConnectionSpec, live: LiveConnection | None, path: Path) -> list[Change]:
    if spec.from_registry is not None:
        return _registry_connection(spec, live, path)
    argv = argv_of(spec)
    if live is None:
        target = f"command: {shlex.join(argv)}" if argv is not None else f"url: {public_url(spec.url or '')}"
        details = [f"connector: {spec.connector}", target]
        details += [f"env.{k}: {CHANGED}" for k in spec.env] + [
            f"headers.{k}: {CHANGED}" for k in spec.headers
        ]
        if spec.pinning != "accept":
            details.append(f"pinning: {spec.pinning}")
        if spec.oauth:
            details.append("oauth: on")
        return [Change("connection", "create", spec.name, tuple(details), path, spec)]
    row = live.row
    if live.from_registry is not None:  # defined by hand in the file, from a registry here
        detail = f"from_registry: {live.from_registry} -> (none)"
        return [
            Change("connection", "update", spec.name, (detail,), path, spec, live, {"registry_switch": True})
        ]
    details = []
    if row.connector != spec.connector:
        details.append(f"connector: {row.connector} -> {spec.connector}")
    if argv is not None and row.command != argv:
        details.append(f"command: {shlex.join(row.command or [])} -> {shlex.join(argv)}")
    if spec.url is not None and live.url != spec.url:  # its secrets shown as *** (R-13.7)
        details.append(f"url: {public_url(row.url or '(none)')} -> {public_url(spec.url)}")
    details += _secret_pairs("env", live.env, spec.env) + _secret_pairs("headers", live.headers, spec.headers)
    if row.pinning != spec.pinning:
        details.append(f"pinning: {row.pinning} -> {spec.pinning}")
    wanted_auth = (
        None if not spec.oauth else "oauth_member" if (oauth_of(spec) or {}).get("per_member") else "oauth"
    )
    oauth_changed = row.auth != wanted_auth or _oauth_settings(live.oauth) != _oauth_settings(oauth_of(spec))
    if oauth_changed:
        details.append(f"oauth: {CHANGED}")
    if not details:
        return []
    return [
        Change(
            "connection",
            "update",
            spec.name,
            tuple(details),
            path,
            spec,
            live,
            {"oauth_changed": oauth_changed},
        )
    ]


def _oauth_settings(sealed: dict[str, Any] | None) -> dict[str, Any]:
    return {k: v for k, v in (sealed or {}).items() if k != "per_member" and v}


def _secret_pairs(section: str, old: dict[str, str], new: dict[str, str]) -> list[str]:
    out = [f"{section}.{k}: {CHANGED}" for k in new if old.get(k) != new[k]]
    return out + [f"{section}.{k}: (removed)" for k in old if k not in new]


def _rule_name(key: tuple[str | None, ...]) -> str:
    effect, kind, target, connector, account, tool = key
    parts = [f"{kind} {target} {effect}s"]
    parts += [f"{n} {v}" for n, v in (("connector", connector), ("account", account), ("tool", tool)) if v]
    return (
        " ".join(parts) if len(parts) > 1 else parts[0] + (" everything" if effect == "block" else " nothing")
    )


def _approval_name(key: tuple[str | None, ...]) -> str:
    risk, account, role = key
    return " ".join(
        [f"{risk} calls"] + [f"{n} {v}" for n, v in (("of account", account), ("by role", role)) if v]
    )


def _limit_name(key: tuple[str | None, ...]) -> str:
    member, role, account, tool = key
    who = f"member {member}" if member else f"role {role}" if role else "every member"
    where = f"{account}__{tool}" if tool else account or "every call"
    return f"{who} on {where}"
