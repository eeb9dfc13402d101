"""``toolcrib limits set / list / remove`` (R-7.10, #21): the command line's face of rate limits,
acting as the host operator through the same gateway functions as MCP and REST."""

from __future__ import annotations

import json

from tests.conftest import cli, cli_json


def test_r7_10_limits_are_set_listed_and_removed_from_the_command_line(db_url: str) -> None:
    cli_json(db_url, "init")
    cli(db_url, "members", "add", "mia", "--role", "member")
    rule = cli_json(db_url, "limits", "set", "--member", "mia", "--per-minute", "30", "--per-day", "900")
    assert isinstance(rule, dict)
    assert (rule["member"], rule["role"], rule["per_minute"], rule["per_day"]) == ("mia", None, 30, 900)
    replaced = cli_json(db_url, "limits", "set", "--member", "mia", "--per-minute", "10")
    assert isinstance(replaced, dict)
    assert cli_json(db_url, "limits", "list") == [replaced]  # one limit per member, role, account, tool
    assert cli(db_url, "limits", "remove", replaced["id"]).returncode == 0
    assert cli_json(db_url, "limits", "list") == []


def test_r7_10_a_malformed_limit_exits_1_with_invalid_arguments(db_url: str) -> None:
    cli_json(db_url, "init")
    for args in (
        ("--role", "member", "--member", "mia", "--per-minute", "5"),  # both
        ("--tool", "echo", "--per-minute", "5"),  # a tool without its account
        ("--per-minute", "0"),
        ("--per-day", "-4"),
        ("--per-minute", "99999999999"),
        ("--role", "member"),  # no count
    ):
        done = cli(db_url, "limits", "set", *args, "--json", check=False)
        assert done.returncode == 1, args
        assert json.loads(done.stdout)["error"]["code"] == "invalid_arguments", (args, done.stdout)
    # a real process (#33)
    missing = cli(db_url, "limits", "remove", "rul_nothing", check=False, process=True)
    assert missing.returncode == 1
    assert "not_found" in missing.stderr
    assert cli_json(db_url, "limits", "list") == []
