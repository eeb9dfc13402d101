"""Which calls need an approval before they run (#14; the approval step of R-11.2). Pure.

A rule names a classification (``read``, ``write`` or ``destructive``, R-7.4) and may narrow it to
one account (connection) and/or one role; a call needs an approval when any rule matches it.
The absence of rules is the default: no call needs one.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from toolcrib.errors import ConfigError
from toolcrib.policy.roles import ROLES

__all__ = ["APPROVABLE", "ApprovalRule", "requires_approval", "validate_approval_rule"]

APPROVABLE: tuple[str, ...] = ("read", "write", "destructive")
"""The classifications a rule can name; ``forbidden`` tools never run, so need no approval."""


@dataclass(frozen=True, slots=True)
class ApprovalRule:
    id: str
    classification: str
    account: str | None = None
    role: str | None = None

    def matches(self, *, risk: str, account: str, role: str) -> bool:
        return self.classification == risk and self.account in (None, account) and self.role in (None, role)


def validate_approval_rule(rule: ApprovalRule) -> None:
    if rule.classification not in APPROVABLE:
        raise ConfigError(f"classification must be one of {', '.join(APPROVABLE)}")
    if rule.role is not None and rule.role not in ROLES:
        raise ConfigError(f"role must be one of {', '.join(ROLES)}")


def requires_approval(
    rules: Iterable[ApprovalRule], *, risk: str, account: str, role: str
) -> ApprovalRule | None:
    """The first rule that makes this call need an approval, or None."""
    return next((r for r in rules if r.matches(risk=risk, account=account, role=role)), None)
