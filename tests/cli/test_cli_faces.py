"""The command line validates by the operations' schemas and prints in-band codes (R-3.3, R-10.2)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from tests.conftest import cli


def test_r10_2_cli_frozen_value_that_is_not_json_is_invalid_arguments_at_value(db_url: str) -> None:
    out = cli(db_url, "frozen", "set", "desk", "add_numbers", "a", "{oops", check=False)
    assert out.returncode == 1
    assert out.stderr.startswith("invalid_arguments:")
    assert "/value: not JSON text" in out.stderr
    assert "Expecting" not in out.stderr  # Python's json message


@pytest.mark.usefixtures("cli_processes")  # a real-process smoke test (#33)
def test_r3_3_cli_store_failure_prints_internal_error_and_logs_the_traceback_under_its_id(
    tmp_path: Path,
) -> None:
    broken = tmp_path / "broken.db"
    broken.write_bytes(b"this is not a database" * 100)
    out = cli(f"sqlite:///{broken}", "members", "list", check=False)
    assert out.returncode == 1
    lines = out.stderr.splitlines()
    first = next(line for line in lines if line.startswith("internal_error:"))
    log = "\n".join(line for line in lines if line != first)
    assert "sqlite" not in first.lower()
    assert "database" not in first.lower()
    incident = re.search(r"incident ([0-9a-f]{16})", first)
    assert incident is not None
    assert f"incident {incident.group(1)}" in log
    assert "Traceback" in log


def test_r10_2_cli_call_args_that_are_not_an_object_are_invalid_arguments_at_arguments(db_url: str) -> None:
    for args in ("{oops", "[1, 2]"):
        out = cli(db_url, "call", "desk__add_numbers", "--args", args, check=False)
        assert out.returncode == 1
        assert out.stderr.startswith("invalid_arguments:")
        assert "/arguments:" in out.stderr
        assert "Expecting" not in out.stderr
