"""The approval commands (#14): a rule holds a call made on the command line; an approval runs it once."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import FIXTURE_SERVER, cli, cli_json


def test_14_cli_rule_holds_a_destructive_call_until_it_is_approved_then_runs_it_once(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'toolcrib.db'}"
    marker = tmp_path / "purged.txt"
    cli(url, "init")
    cli(url, "connections", "add", "desk", "--connector", "Helpdesk", "--command", " ".join(FIXTURE_SERVER))
    rules = cli_json(url, "approvals", "set", "destructive", "--account", "desk")
    assert [(r["classification"], r["account"]) for r in rules] == [("destructive", "desk")]  # type: ignore[union-attr, index]
    args = ("call", "desk__purge_records", "--args", json.dumps({"marker": str(marker)}), "--json")
    held = cli(url, *args, check=False)
    assert held.returncode == 1
    error = json.loads(held.stdout)["error"]
    assert error["code"] == "approval_required"
    assert not marker.exists()
    approved = cli_json(url, "approvals", "approve", error["approval_id"])
    assert approved["status"] == "approved"  # type: ignore[index]
    assert cli(url, *args, check=False).returncode == 0
    assert marker.read_text() == "purged"
    again = cli(url, *args, check=False)
    assert json.loads(again.stdout)["error"]["code"] == "approval_required"
    assert cli_json(url, "approvals", "set", "destructive", "--account", "desk", "--off") == []
    assert cli(url, *args, check=False).returncode == 0


def test_14_cli_a_declined_approval_runs_nothing_and_shows_no_sealed_arguments(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'toolcrib.db'}"
    marker = tmp_path / "purged.txt"
    cli(url, "init")
    cli(url, "connections", "add", "desk", "--connector", "Helpdesk", "--command", " ".join(FIXTURE_SERVER))
    cli_json(url, "approvals", "set", "destructive", "--account", "desk")
    args = ("call", "desk__purge_records", "--args", json.dumps({"marker": str(marker)}), "--json")
    held = json.loads(cli(url, *args, check=False, process=True).stdout)["error"]  # a real process (#33)
    declined = cli_json(url, "approvals", "decline", held["approval_id"])
    assert declined["status"] == "declined"  # type: ignore[index]
    assert "arguments" not in declined  # type: ignore[operator]
    again = json.loads(cli(url, *args, check=False).stdout)["error"]
    assert again["code"] == "approval_required"
    assert again["approval_id"] != held["approval_id"]
    assert not marker.exists()
