"""The command line prints data as written: brackets in reasons and names are not rich markup."""

from __future__ import annotations

import pytest
from tests.conftest import cli


@pytest.mark.usefixtures("cli_processes")  # a real-process smoke test (#33)
def test_error_message_keeps_its_brackets(db_url: str) -> None:
    cli(db_url, "init")  # the command line acts as the organization's owner (#21)
    out = cli(db_url, "connections", "add", "Bad Name", "--connector", "X", "--command", "x", check=False)
    assert out.returncode == 1
    assert "^[a-z0-9][a-z0-9-]{0,39}$" in out.stderr


def test_table_cells_keep_their_brackets(db_url: str) -> None:
    cli(db_url, "init")
    added = cli(
        db_url,
        "connections",
        "add",
        "odd",
        "--connector",
        "[bold]X",
        "--command",
        "/no/such/[Errno]",
        check=False,
    )
    assert added.returncode == 1  # the connection ends in error: the command says so (#13)
    listed = cli(db_url, "connections", "list", env={"COLUMNS": "200"}).stdout  # no cell wrapping
    assert "[bold]X" in listed
    assert "[Errno]" in listed
