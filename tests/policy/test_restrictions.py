"""R-8.1..R-8.6: the restriction resolver, rule matching and validation, explanations."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from toolcrib.errors import ConfigError
from toolcrib.policy import Rule, describe_rule, explain, resolve, validate_rule


def role_rule(rule_id: str, effect: str, **what: str) -> Rule:
    return Rule(rule_id, effect, "role", "member", **what)  # type: ignore[arg-type]


def user_rule(rule_id: str, effect: str, **what: str) -> Rule:
    return Rule(rule_id, effect, "user", "ann", **what)  # type: ignore[arg-type]


def reach(rules: Sequence[Rule], account: str = "notion-legal", tool: str | None = "create_page") -> bool:
    connector = account.split("-")[0]
    return resolve(
        rules, role="member", member="ann", account=account, connector=connector, tool=tool
    ).allowed


# R-8.1 -------------------------------------------------------------------------------------------


def test_r8_1_no_rules_allows_everything() -> None:
    decision = resolve([], role="member", member="ann", account="notion-legal", connector="notion", tool="x")
    assert decision.allowed
    assert decision.deciding_rules == ()
    assert decision.reasons == ("no rules for role member or user ann: allowed by default",)


def test_r8_1_rules_of_other_targets_do_not_apply() -> None:
    rules = [
        Rule("r1", "block", "role", "guest"),
        Rule("r2", "block", "user", "bob"),
        Rule("r3", "allow", "role", "admin"),
    ]
    assert reach(rules)


# R-8.2 -------------------------------------------------------------------------------------------


def test_r8_2_block_beats_allow_in_a_layer() -> None:
    rules = [role_rule("a", "allow", account="notion-legal"), role_rule("b", "block", account="notion-legal")]
    decision = resolve(
        rules, role="member", member="ann", account="notion-legal", connector="notion", tool="t"
    )
    assert not decision.allowed
    assert decision.deciding_rules == ("b",)


def test_r8_2_block_beats_exact_tool_allow() -> None:
    rules = [
        role_rule("a", "allow", account="notion-legal", tool="delete_page"),
        role_rule("b", "block", tool="delete_*"),
    ]
    assert not reach(rules, tool="delete_page")


def test_r8_2_allow_rules_combine() -> None:
    rules = [role_rule("a", "allow", account="notion-legal"), role_rule("b", "allow", account="github-eng")]
    assert reach(rules, "notion-legal")
    assert reach(rules, "github-eng")
    assert not reach(rules, "slack-main")


def test_r8_2_block_rules_combine() -> None:
    rules = [role_rule("a", "block", account="notion-legal"), role_rule("b", "block", connector="github")]
    assert not reach(rules, "notion-legal")
    assert not reach(rules, "github-eng")
    assert reach(rules, "notion-marketing")


def test_r8_2_allowlist_engages_on_presence_of_an_allow_rule() -> None:
    rules = [role_rule("a", "allow", account="github-eng")]
    assert not reach(rules, "notion-legal")


def test_r8_2_allow_naming_nothing_denies_everything() -> None:
    rules = [role_rule("a", "allow")]
    assert not reach(rules, "notion-legal")
    assert not reach(rules, "notion-legal", tool=None)
    decision = resolve(rules, role="member", member="ann", account="x", connector="custom", tool="t")
    assert decision.deciding_rules == ("a",)


def test_r8_2_user_layer_narrows() -> None:
    rules = [
        role_rule("a", "allow", account="notion-legal"),
        user_rule("b", "allow", account="notion-legal", tool="get_page"),
    ]
    assert reach(rules, tool="get_page")
    assert not reach(rules, tool="create_page")


def test_r8_2_user_allow_cannot_widen_the_role_allowlist() -> None:
    rules = [role_rule("a", "allow", account="notion-legal"), user_rule("b", "allow", account="github-eng")]
    assert not reach(rules, "github-eng")
    # And the user's own allowlist now also excludes what the role allowed: intersection.
    assert not reach(rules, "notion-legal")


def test_r8_2_user_allow_cannot_lift_a_role_block() -> None:
    rules = [role_rule("a", "block", account="notion-legal"), user_rule("b", "allow", account="notion-legal")]
    assert not reach(rules)


def test_r8_2_user_block_narrows_an_unrestricted_role() -> None:
    assert not reach([user_rule("a", "block", account="notion-legal")])
    assert reach([user_rule("a", "block", account="notion-legal")], "notion-marketing")


# R-8.3 -------------------------------------------------------------------------------------------


def test_r8_3_block_by_connector_kind_covers_every_account_case_insensitively() -> None:
    rules = [role_rule("a", "block", connector="Notion")]
    assert not reach(rules, "notion-legal")
    assert not reach(rules, "notion-marketing")
    assert reach(rules, "github-eng")


def test_r8_3_block_by_tool_glob_within_an_account() -> None:
    rules = [role_rule("a", "block", account="notion-legal", tool="delete_*")]
    assert not reach(rules, "notion-legal", "delete_page")
    assert reach(rules, "notion-legal", "create_page")
    assert reach(rules, "notion-marketing", "delete_page")


def test_r8_3_block_glob_is_case_sensitive() -> None:
    rules = [role_rule("a", "block", tool="delete_*")]
    assert not reach(rules, tool="delete_page")
    assert reach(rules, tool="Delete_page")


def test_r8_3_block_with_only_a_tool_glob_applies_to_every_account() -> None:
    rules = [role_rule("a", "block", tool="*_page")]
    assert not reach(rules, "notion-legal", "get_page")
    assert not reach(rules, "github-eng", "get_page")


def test_r8_3_block_by_tool_glob_within_a_connector_kind() -> None:
    rules = [role_rule("a", "block", connector="notion", tool="delete_*")]
    assert not reach(rules, "notion-marketing", "delete_page")
    assert reach(rules, "github-eng", "delete_page")


def test_r8_3_allow_matches_exact_tool_names_only() -> None:
    rules = [role_rule("a", "allow", account="notion-legal", tool="get_page")]
    assert reach(rules, tool="get_page")
    assert not reach(rules, tool="get_pages")
    assert not reach(rules, tool="get_page_v2")


def test_r8_3_allow_never_treats_its_tool_as_a_pattern_even_if_unvalidated() -> None:
    rules = [role_rule("a", "allow", account="notion-legal", tool="get_*")]
    assert not reach(rules, tool="get_page")
    assert reach(rules, tool="get_*")


def test_r8_3_allow_naming_an_account_allows_all_its_tools() -> None:
    rules = [role_rule("a", "allow", account="notion-legal")]
    assert reach(rules, tool="anything_at_all")
    assert not reach(rules, "notion-legal2")


def test_r8_3_allow_with_connector_and_account_needs_both_to_match() -> None:
    rules = [role_rule("a", "allow", connector="NOTION", account="notion-legal")]
    assert reach(rules)
    assert not resolve(
        rules, role="member", member="ann", account="notion-legal", connector="custom", tool="x"
    ).allowed


@pytest.mark.parametrize(
    "rule",
    [
        role_rule("a", "allow", account="notion-legal", tool="delete_*"),
        role_rule("a", "allow", account="notion-legal", tool="get_pag?"),
        role_rule("a", "allow", account="notion-legal", tool="[gs]et"),
        role_rule("a", "allow", connector="notion"),
        role_rule("a", "allow", tool="get_page"),
        role_rule("a", "block", account="Notion Legal"),
        role_rule("a", "block", tool=" "),
        Rule("a", "block", "role", "superuser"),
        Rule("a", "block", "user", ""),
        Rule("a", "deny", "role", "member"),  # type: ignore[arg-type]
        Rule("a", "block", "group", "eng"),  # type: ignore[arg-type]
    ],
    ids=lambda r: describe_rule(r).replace(" ", "_"),
)
def test_r8_3_invalid_rules_are_refused_at_creation(rule: Rule) -> None:
    with pytest.raises(ConfigError):
        validate_rule(rule)


@pytest.mark.parametrize(
    "rule",
    [
        role_rule("a", "allow"),
        role_rule("a", "allow", account="notion-legal"),
        role_rule("a", "allow", connector="notion", account="notion-legal", tool="get_page"),
        role_rule("a", "block"),
        role_rule("a", "block", connector="notion"),
        role_rule("a", "block", tool="delete_*"),
        user_rule("a", "block", account="notion-legal", tool="[dp]*"),
    ],
    ids=lambda r: describe_rule(r).replace(" ", "_"),
)
def test_r8_3_valid_rules_pass_validation(rule: Rule) -> None:
    validate_rule(rule)


# Connection-level questions (tool=None), as asked by listing and connecting (R-8.4) ----------------


def test_r8_4_connection_reachable_when_only_some_tools_are_blocked() -> None:
    assert reach([role_rule("a", "block", account="notion-legal", tool="delete_*")], tool=None)


def test_r8_4_connection_unreachable_when_blocked_whole() -> None:
    assert not reach([role_rule("a", "block", account="notion-legal")], tool=None)
    assert not reach([role_rule("a", "block", connector="notion")], tool=None)
    assert not reach([role_rule("a", "block", account="notion-legal", tool="*")], tool=None)


def test_r8_4_connection_reachable_when_the_allowlist_names_one_of_its_tools() -> None:
    rules = [role_rule("a", "allow", account="notion-legal", tool="get_page")]
    assert reach(rules, tool=None)
    assert not reach(rules, "notion-marketing", tool=None)


def test_r8_4_member_none_answers_for_the_role_alone() -> None:
    rules = [user_rule("u", "block")]
    decision = resolve(
        rules, role="member", member=None, account="notion-legal", connector="notion", tool="t"
    )
    assert decision.allowed


# explanations --------------------------------------------------------------------------------


def test_r8_6_explain_names_the_blocking_rule_in_words() -> None:
    rules = [
        role_rule("r1", "allow", account="notion-legal"),
        role_rule("r3", "block", account="notion-legal", tool="delete_*"),
    ]
    lines = explain(
        rules, role="member", member="ann", account="notion-legal", connector="notion", tool="delete_page"
    )
    assert lines == [
        "account notion-legal tool delete_page: withheld",
        "blocked by rule r3 (role member blocks account notion-legal tools delete_*)",
    ]


def test_r8_6_explain_names_the_allowing_rules() -> None:
    rules = [role_rule("r1", "allow", account="notion-legal"), user_rule("r2", "block", tool="delete_*")]
    lines = explain(
        rules, role="member", member="ann", account="notion-legal", connector="notion", tool="get_page"
    )
    assert lines == [
        "account notion-legal tool get_page: allowed",
        "allowed by rule r1 (role member allows account notion-legal)",
    ]


def test_r8_6_explain_an_allowlist_that_does_not_name_the_tool() -> None:
    rules = [role_rule("r1", "allow")]
    decision = resolve(
        rules, role="member", member="ann", account="notion-legal", connector="notion", tool="x"
    )
    assert decision.reasons == (
        "not on the allowlist of role member, which holds only: rule r1 (role member allows nothing)",
    )


def test_r8_6_explain_default_when_rules_exist_but_none_covers() -> None:
    rules = [role_rule("r1", "block", account="github-eng")]
    decision = resolve(
        rules, role="member", member="ann", account="notion-legal", connector="notion", tool="x"
    )
    assert decision.allowed
    assert decision.reasons == (
        "no rule for role member or user ann covers account notion-legal tool x: allowed by default",
    )


def test_r8_6_denial_cites_rules_of_both_layers() -> None:
    rules = [role_rule("r1", "block", connector="notion"), user_rule("r2", "block", account="notion-legal")]
    decision = resolve(
        rules, role="member", member="ann", account="notion-legal", connector="notion", tool="x"
    )
    assert decision.deciding_rules == ("r1", "r2")
