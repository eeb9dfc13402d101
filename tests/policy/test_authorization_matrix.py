"""The authorization matrix: role x grant scopes x classification x restriction layers.

For every case the expected answer comes from the plain statement of the rules below, written
without calling the code under test:

- only owner, admin and member hold ``tool:execute`` (R-7.1); without it ``tools/list`` is empty
  and every call is ``permission_required`` (R-7.2);
- then the grant needs ``mcp:tools`` (R-7.3), then the tool must not be ``forbidden`` (R-7.4),
  then the restriction layers must let it through (R-8), then the grant needs the scope of the
  classification (R-7.3) — the order of SPEC section 6;
- search shows a card exactly when the call would pass, names the tool in ``restricted`` when the
  call would stop at the restriction step, and shows nothing otherwise (R-5.1, R-8.5).

Each restriction scenario states by hand whether the target tool is reachable.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from itertools import combinations

import pytest

from toolcrib.errors import InBandError
from toolcrib.policy import (
    Principal,
    Rule,
    classify,
    lists_tools,
    require_allowed,
    require_execute,
    require_not_forbidden,
    require_scope_for,
    require_tools_scope,
    resolve,
    validate_rule,
    visibility,
)

ROLES = ("owner", "admin", "member", "guest", "auditor", "billing_admin")
EXECUTORS = {"owner", "admin", "member"}
ALL_SCOPES = ("mcp:tools", "mcp:read", "mcp:write", "mcp:destructive")
SCOPE_SETS = [frozenset(c) for n in range(5) for c in combinations(ALL_SCOPES, n)]
NEEDED_SCOPE = {"read": "mcp:read", "write": "mcp:write", "destructive": "mcp:destructive"}
ACCOUNT, CONNECTOR, MEMBER = "notion-legal", "notion", "ann"
# The tool under test, per classification: (name, admin override).
TOOLS = {
    "read": ("get_page", None),
    "write": ("create_page", None),
    "destructive": ("delete_page", None),
    "forbidden": ("export_page", "forbidden"),
}


def other_role(role: str) -> str:
    return "guest" if role != "guest" else "member"


@dataclass(frozen=True)
class Scenario:
    name: str
    rules: Callable[[str, str], list[Rule]]  # (role, tool) -> rules
    reachable: bool


def r(rule_id: str, effect: str, kind: str, target: str, **what: str | None) -> Rule:
    return Rule(rule_id, effect, kind, target, **what)  # type: ignore[arg-type]


SCENARIOS = [
    Scenario("no-rules", lambda role, tool: [], True),
    Scenario(
        "rules-for-others-only",
        lambda role, tool: [r("o1", "block", "role", other_role(role)), r("o2", "allow", "user", "bob")],
        True,
    ),
    Scenario(
        "role-allow-names-tool",
        lambda role, tool: [r("a1", "allow", "role", role, account=ACCOUNT, tool=tool)],
        True,
    ),
    Scenario(
        "role-allow-names-account", lambda role, tool: [r("a1", "allow", "role", role, account=ACCOUNT)], True
    ),
    Scenario("role-allow-names-nothing", lambda role, tool: [r("a1", "allow", "role", role)], False),
    Scenario(
        "role-allow-other-account",
        lambda role, tool: [r("a1", "allow", "role", role, account="github-eng")],
        False,
    ),
    Scenario(
        "role-block-account", lambda role, tool: [r("b1", "block", "role", role, account=ACCOUNT)], False
    ),
    Scenario(
        "role-block-other-account",
        lambda role, tool: [r("b1", "block", "role", role, account="notion-pr")],
        True,
    ),
    Scenario(
        "role-block-connector", lambda role, tool: [r("b1", "block", "role", role, connector="NOTION")], False
    ),
    Scenario(
        "role-block-tool-glob",
        lambda role, tool: [r("b1", "block", "role", role, account=ACCOUNT, tool=tool.split("_")[0] + "_*")],
        False,
    ),
    Scenario(
        "role-block-beats-role-allow",
        lambda role, tool: [
            r("a1", "allow", "role", role, account=ACCOUNT, tool=tool),
            r("b1", "block", "role", role, tool="*_page"),
        ],
        False,
    ),
    Scenario("user-block", lambda role, tool: [r("u1", "block", "user", MEMBER, account=ACCOUNT)], False),
    Scenario(
        "user-allow-narrowing-keeps-tool",
        lambda role, tool: [
            r("a1", "allow", "role", role, account=ACCOUNT),
            r("u1", "allow", "user", MEMBER, account=ACCOUNT, tool=tool),
        ],
        True,
    ),
    Scenario(
        "user-allow-narrowing-drops-tool",
        lambda role, tool: [
            r("a1", "allow", "role", role, account=ACCOUNT),
            r("u1", "allow", "user", MEMBER, account=ACCOUNT, tool="other_page"),
        ],
        False,
    ),
    Scenario(
        "role-allow-plus-user-allow-widening-attempt",
        lambda role, tool: [
            r("a1", "allow", "role", role, account=ACCOUNT, tool="other_page"),
            r("u1", "allow", "user", MEMBER, account=ACCOUNT, tool=tool),
        ],
        False,
    ),
    Scenario(
        "user-allow-cannot-lift-role-block",
        lambda role, tool: [
            r("b1", "block", "role", role, account=ACCOUNT),
            r("u1", "allow", "user", MEMBER, account=ACCOUNT),
        ],
        False,
    ),
]


def expected(role: str, scopes: frozenset[str], risk: str, reachable: bool) -> tuple[bool, str, str]:
    """(meta-tools listed, execution outcome, search visibility), from the rules as stated."""
    listed = role in EXECUTORS
    if role not in EXECUTORS:
        return listed, "permission_required:tool:execute", "hidden"
    if "mcp:tools" not in scopes:
        return listed, "scope_required:mcp:tools", "hidden"
    if risk == "forbidden":
        return listed, "forbidden", "hidden"
    if not reachable:
        return listed, "restricted", "restricted"
    if NEEDED_SCOPE[risk] not in scopes:
        return listed, f"scope_required:{NEEDED_SCOPE[risk]}", "hidden"
    return listed, "ok", "visible"


def execute_through_gates(p: Principal, tool: str, risk: str, rules: list[Rule]) -> str:
    """Run the policy gates in pipeline order (steps 2, 3, 6, 7, 8); answer the outcome code."""
    try:
        require_execute(p)
        require_tools_scope(p)
        require_not_forbidden(risk)
        decision = resolve(
            rules, role=p.role, member=p.member, account=ACCOUNT, connector=CONNECTOR, tool=tool
        )
        require_allowed(decision, f"{ACCOUNT}__{tool}")
        require_scope_for(p, risk)
    except InBandError as exc:
        extra = exc.extra()
        named = extra.get("permission") or extra.get("scope")
        return f"{exc.code}:{named}" if named else exc.code
    return "ok"


def short(scopes: frozenset[str]) -> str:
    return "+".join(s.removeprefix("mcp:") for s in ALL_SCOPES if s in scopes) or "none"


COMBINATIONS = [
    (role, scopes, risk, scenario)
    for role in ROLES
    for scopes in SCOPE_SETS
    for risk in TOOLS
    for scenario in SCENARIOS
]
CASES = [
    pytest.param(role, scopes, risk, scenario, id=f"{role}-{short(scopes)}-{risk}-{scenario.name}")
    for role, scopes, risk, scenario in COMBINATIONS
]


@pytest.mark.parametrize(("role", "scopes", "risk", "scenario"), CASES)
def test_r7_r8_authorization_matrix(role: str, scopes: frozenset[str], risk: str, scenario: Scenario) -> None:
    tool, override = TOOLS[risk]
    rules = scenario.rules(role, tool)
    for rule in rules:
        validate_rule(rule)
    p = Principal(member=MEMBER, role=role, scopes=scopes, grant_id="g1")
    want_listed, want_outcome, want_visibility = expected(role, scopes, risk, scenario.reachable)

    assert classify(tool, {}, override) == risk
    assert lists_tools(p) is want_listed
    assert execute_through_gates(p, tool, risk, rules) == want_outcome
    decision = resolve(rules, role=role, member=MEMBER, account=ACCOUNT, connector=CONNECTOR, tool=tool)
    assert visibility(p, risk=risk, decision=decision) == want_visibility


def test_matrix_covers_every_outcome() -> None:
    outcomes = {
        expected(role, scopes, risk, scenario.reachable)[1] for role, scopes, risk, scenario in COMBINATIONS
    }
    assert outcomes == {
        "permission_required:tool:execute",
        "scope_required:mcp:tools",
        "forbidden",
        "restricted",
        "scope_required:mcp:read",
        "scope_required:mcp:write",
        "scope_required:mcp:destructive",
        "ok",
    }
    assert len(CASES) == len({c.id for c in CASES}) == 6 * 16 * 4 * len(SCENARIOS)
