"""What applying a file would change (#26): one :class:`Change` per object created, updated or
deleted, compared with the organization as stored (:mod:`.state`).

Objects are matched by what names them: a connection and a member by name, a frozen value by
account, tool and parameter, a limit by member, role, account and tool, a classification by
account and tool; a restriction and an approval rule have no name and are matched whole (a changed
rule is the old one deleted and the new one created). Deletions are planned only with ``prune``.

A secret (a connection's env or header value, an OAuth client secret, a secret frozen value) is
compared by its value inside the gateway and shown as ``(changed)``, never by its value.
"""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass, field
from typing import Any

from toolcrib.gateway.orgfile.checks import Desired
from toolcrib.gateway.orgfile.loading import Path
from toolcrib.gateway.orgfile.models import ConnectionSpec
from toolcrib.gateway.orgfile.state import Current, LiveConnection, approval_key, limit_key, rule_key

__all__ = ["Change", "plan"]

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


def plan(
    desired: Desired, now: Current, *, prune: bool, keep_members: frozenset[str] = frozenset()
) -> list[Change]:
    """The changes, in the order ``apply`` makes them: creations and updates section by section
    (connections first: the rest may name them), then deletions, connections last."""
    org = desired.org
    changes: list[Change] = []
    for i, c in enumerate(org.connections):
        changes.extend(_connection(c, now.connections.get(c.name), ("connections", i)))
    for i, m in enumerate(org.members):
        had = now.members.get(m.name)
        if had is None:
            gone = {"removed": True} if m.name in now.removed_members else {}
            changes.append(
                Change("member", "create", m.name, (f"role: {m.role}",), ("members", i), m, extra=gone)
            )
        elif had.role != m.role:
            changes.append(
                Change("member", "update", m.name, (f"role: {had.role} -> {m.role}",), ("members", i), m, had)
            )
    stored_rules = {
        rule_key(r.effect, r.target_kind, r.target, r.connector, r.account, r.tool): r
        for r in now.restrictions
    }
    wanted_rules = set()
    for i, r in enumerate(org.restrictions):
        kind, target = ("role", r.role) if r.role is not None else ("user", r.user)
        key = rule_key(r.effect, kind, str(target), r.connector, r.account, r.tool)
        wanted_rules.add(key)
        if key not in stored_rules:
            changes.append(Change("restriction", "create", _rule_name(key), (), ("restrictions", i), r))
    wanted_frozen = set()
    for i, f in enumerate(org.frozen):
        key3 = (f.account, f.tool, f.parameter)
        wanted_frozen.add(key3)
        secret = desired.frozen_secret[i]
        had_f = now.frozen.get(key3)
        name = f"{f.account}__{f.tool}.{f.parameter}"
        shown = CHANGED if secret else json.dumps(f.value)
        if had_f is None:
            changes.append(
                Change(
                    "frozen", "create", name, (f"value: {shown}",), ("frozen", i), f, extra={"secret": secret}
                )
            )
        elif had_f != (f.value, secret):
            details = [f"value: {shown}"] if had_f[0] != f.value else []
            if had_f[1] != secret:
                details.append(f"secret: {had_f[1]} -> {secret}")
            changes.append(
                Change("frozen", "update", name, tuple(details), ("frozen", i), f, had_f, {"secret": secret})
            )
    stored_approvals = {approval_key(a.classification, a.account, a.role): a for a in now.approvals}
    wanted_approvals = set()
    for i, a in enumerate(org.approvals):
        akey = approval_key(a.risk, a.account, a.role)
        wanted_approvals.add(akey)
        if akey not in stored_approvals:
            changes.append(Change("approval", "create", _approval_name(akey), (), ("approvals", i), a))
    stored_limits = {limit_key(x.member, x.role, x.account, x.tool): x for x in now.limits}
    wanted_limits = set()
    for i, lim in enumerate(org.limits):
        lkey = limit_key(lim.member, lim.role, lim.account, lim.tool)
        wanted_limits.add(lkey)
        had_l = stored_limits.get(lkey)
        counts = f"per_minute: {lim.per_minute}, per_day: {lim.per_day}"
        if had_l is None:
            changes.append(Change("limit", "create", _limit_name(lkey), (counts,), ("limits", i), lim))
        elif (had_l.per_minute, had_l.per_day) != (lim.per_minute, lim.per_day):
            before = f"per_minute: {had_l.per_minute}, per_day: {had_l.per_day}"
            changes.append(
                Change(
                    "limit",
                    "update",
                    _limit_name(lkey),
                    (f"{before} -> {counts}",),
                    ("limits", i),
                    lim,
                    had_l,
                )
            )
    wanted_classes = set()
    for i, cl in enumerate(org.classifications):
        ckey = (cl.account, cl.tool)
        wanted_classes.add(ckey)
        had_c = now.classifications.get(ckey)
        if had_c != cl.risk:
            action = "create" if had_c is None else "update"
            detail = f"risk: {cl.risk}" if had_c is None else f"risk: {had_c} -> {cl.risk}"
            changes.append(
                Change(
                    "classification",
                    action,
                    f"{cl.account}__{cl.tool}",
                    (detail,),
                    ("classifications", i),
                    cl,
                    had_c,
                )
            )
    if prune:
        changes += [
            Change("limit", "delete", _limit_name(k), (), current=x)
            for k, x in stored_limits.items()
            if k not in wanted_limits
        ]
        changes += [
            Change("approval", "delete", _approval_name(k), (), current=a)
            for k, a in stored_approvals.items()
            if k not in wanted_approvals
        ]
        changes += [
            Change("frozen", "delete", f"{k[0]}__{k[1]}.{k[2]}", (), current=(k, v))
            for k, v in now.frozen.items()
            if k not in wanted_frozen
        ]
        changes += [
            Change("classification", "delete", f"{k[0]}__{k[1]}", (), current=(k, v))
            for k, v in now.classifications.items()
            if k not in wanted_classes
        ]
        changes += [
            Change("restriction", "delete", _rule_name(k), (), current=r)
            for k, r in stored_rules.items()
            if k not in wanted_rules
        ]
        in_file = {m.name for m in org.members}
        changes += [
            Change("member", "delete", name, (), current=m)
            for name, m in now.members.items()
            if name not in in_file and name not in keep_members
        ]
        in_file = {c.name for c in org.connections}
        changes += [
            Change("connection", "delete", name, (), current=c)
            for name, c in now.connections.items()
            if name not in in_file
        ]
    return changes


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
    argv = argv_of(spec)
    if live is None:
        target = f"command: {shlex.join(argv)}" if argv is not None else f"url: {spec.url}"
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
    details = []
    if row.connector != spec.connector:
        details.append(f"connector: {row.connector} -> {spec.connector}")
    if argv is not None and row.command != argv:
        details.append(f"command: {shlex.join(row.command or [])} -> {shlex.join(argv)}")
    if spec.url is not None and row.url != spec.url:
        details.append(f"url: {row.url or '(none)'} -> {spec.url}")
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
