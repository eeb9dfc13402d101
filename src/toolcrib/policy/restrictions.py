"""THE restriction resolver: the only code that decides whether a member reaches a connection or
a tool (SPEC R-8.2, R-8.4). Callers: listing connections, connecting one, search, execution, the
final outbound check, and opening a stored result.

Two layers, the caller's role then the caller's own user rules. In each layer:

1. a matching **block** denies (a block always beats an allow);
2. otherwise, if the layer holds **any** allow rule, the allowlist is engaged: the target is
   reachable only when one of those allows matches it (an allow naming nothing matches nothing,
   so it denies everything);
3. otherwise the layer has no opinion.

The answer is allowed only when both layers allow, so the user layer can only narrow what the
role layer lets through: a user allow never reopens what the role layer denies. No rules at all:
everything is allowed (the organization default, R-8.1).

``tool=None`` asks about the connection itself: it is reachable when no block covers it whole
(a block naming no tool, or the glob ``*``) and, in each layer with an engaged allowlist, some
allow names its account.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from toolcrib.policy.rules import Rule, describe_rule

__all__ = ["Decision", "explain", "resolve"]


@dataclass(frozen=True, slots=True)
class Decision:
    """The resolver's answer, with the rules that decided it, in words and by id."""

    allowed: bool
    reasons: tuple[str, ...]
    deciding_rules: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class _Verdict:
    allowed: bool
    silent: bool
    reasons: tuple[str, ...] = ()
    rules: tuple[str, ...] = ()


def _cite(prefix: str, rules: Sequence[Rule]) -> tuple[str, ...]:
    return tuple(f"{prefix} rule {r.id} ({describe_rule(r)})" for r in rules)


def _judge(layer: Sequence[Rule], label: str, *, connector: str, account: str, tool: str | None) -> _Verdict:
    blocks = [
        r for r in layer if r.effect == "block" and r.matches(connector=connector, account=account, tool=tool)
    ]
    if blocks:
        return _Verdict(False, False, _cite("blocked by", blocks), tuple(r.id for r in blocks))
    allows = [r for r in layer if r.effect == "allow"]
    if not allows:
        return _Verdict(True, True)
    matching = [r for r in allows if r.matches(connector=connector, account=account, tool=tool)]
    if matching:
        return _Verdict(True, False, _cite("allowed by", matching), tuple(r.id for r in matching))
    listed = "; ".join(f"rule {r.id} ({describe_rule(r)})" for r in allows)
    reason = f"not on the allowlist of {label}, which holds only: {listed}"
    return _Verdict(False, False, (reason,), tuple(r.id for r in allows))


def _subject(account: str, tool: str | None) -> str:
    return f"account {account}" if tool is None else f"account {account} tool {tool}"


def resolve(
    rules: Sequence[Rule],
    *,
    role: str,
    member: str | None,
    account: str,
    connector: str,
    tool: str | None = None,
) -> Decision:
    """Decide whether ``member`` (with ``role``) may reach ``tool`` of ``account``, or the account.

    ``member=None`` answers for the role alone (explaining a role target, R-8.6).
    """
    layers = [(f"role {role}", [r for r in rules if r.target_kind == "role" and r.target == role])]
    if member is not None:
        layers.append(
            (f"user {member}", [r for r in rules if r.target_kind == "user" and r.target == member])
        )
    verdicts = [_judge(rs, label, connector=connector, account=account, tool=tool) for label, rs in layers]
    allowed = all(v.allowed for v in verdicts)
    deciding = [v for v in verdicts if v.allowed == allowed and not v.silent]
    if not deciding:
        who = " or ".join(label for label, _ in layers)
        has_rules = any(rs for _, rs in layers)
        head = f"no rule for {who} covers {_subject(account, tool)}" if has_rules else f"no rules for {who}"
        return Decision(True, (f"{head}: allowed by default",), ())
    reasons = tuple(text for v in deciding for text in v.reasons)
    return Decision(allowed, reasons, tuple(rule_id for v in deciding for rule_id in v.rules))


def explain(
    rules: Sequence[Rule],
    *,
    role: str,
    member: str | None,
    account: str,
    connector: str,
    tool: str | None = None,
) -> list[str]:
    """Which rules decided, in words (R-8.6); the first line says allowed or withheld."""
    decision = resolve(rules, role=role, member=member, account=account, connector=connector, tool=tool)
    verdict = "allowed" if decision.allowed else "withheld"
    return [f"{_subject(account, tool)}: {verdict}", *decision.reasons]
