"""Which calls an approval rule holds (#14): classification, then account and role if named."""

from __future__ import annotations

import pytest

from toolcrib.errors import ConfigError
from toolcrib.policy.approvals import ApprovalRule, requires_approval, validate_approval_rule

RULES = (
    ApprovalRule("a", "destructive", account="crm"),
    ApprovalRule("b", "write", role="guest"),
)


@pytest.mark.parametrize(
    ("risk", "account", "role", "held_by"),
    [
        ("destructive", "crm", "member", "a"),
        ("destructive", "desk", "member", None),
        ("write", "desk", "guest", "b"),
        ("write", "desk", "member", None),
        ("read", "crm", "guest", None),
    ],
)
def test_14_a_rule_holds_its_classification_narrowed_by_account_and_role(
    risk: str, account: str, role: str, held_by: str | None
) -> None:
    rule = requires_approval(RULES, risk=risk, account=account, role=role)
    assert (rule.id if rule is not None else None) == held_by


def test_14_no_rules_hold_nothing() -> None:
    assert requires_approval((), risk="destructive", account="crm", role="guest") is None


@pytest.mark.parametrize("rule", [ApprovalRule("x", "forbidden"), ApprovalRule("x", "write", role="king")])
def test_14_a_rule_names_an_approvable_classification_and_a_known_role(rule: ApprovalRule) -> None:
    with pytest.raises(ConfigError):
        validate_approval_rule(rule)
