"""The command line of #13: a light `--help`, one way to find the database, tools listed, errors
with their details (and as JSON), times in ISO 8601, a failed connection is a failed command."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest
from tests.conftest import FIXTURE_SERVER, PYTHON, ROOT, cli, cli_json, env_for, free_port, toolcrib

ISO = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00$")


def run_in(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``toolcrib ARGS`` in ``cwd`` with no database named by the environment."""
    return toolcrib([*args], cwd=cwd, env={"TOOLCRIB_DATABASE_URL": None})


@pytest.fixture(scope="module")
def desk_db(tmp_path_factory: pytest.TempPathFactory) -> str:
    """One organization for the module: an owner and the fixture server over stdio as ``desk``."""
    url = f"sqlite:///{tmp_path_factory.mktemp('desk') / 'toolcrib.db'}"
    cli(url, "init")
    cli(url, "connections", "add", "desk", "--connector", "Helpdesk", "--command", " ".join(FIXTURE_SERVER))
    return url


def test_13_help_imports_neither_the_gateway_nor_the_mcp_sdk_nor_the_settings() -> None:
    probe = (
        "import sys\nfrom toolcrib.cli.main import app\n"
        "heavy = ('mcp', 'toolcrib.gateway', 'toolcrib.settings', 'sqlalchemy', 'pydantic_settings')\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in heavy or m.startswith(heavy)))"
    )
    out = subprocess.run([PYTHON, "-c", probe], cwd=ROOT, env=env_for(), capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"
    shown = run_in(ROOT, "--help")
    assert shown.returncode == 0
    assert "connections" in shown.stdout


def test_13_version_prints_the_package_version(tmp_path: Path) -> None:
    out = run_in(tmp_path, "--version")
    assert out.returncode == 0
    assert re.fullmatch(r"toolcrib \S+\n", out.stdout)


@pytest.mark.usefixtures("cli_processes")  # a real-process smoke test (#33)
def test_13_no_database_named_is_an_error_and_creates_nothing(tmp_path: Path) -> None:
    out = run_in(tmp_path, "members", "list")
    assert out.returncode == 1
    assert out.stderr.startswith("invalid_arguments:")
    assert "TOOLCRIB_DATABASE_URL" in out.stderr
    assert "toolcrib.toml" in out.stderr
    assert list(tmp_path.iterdir()) == []


def test_13_init_records_its_database_and_every_command_finds_it(tmp_path: Path) -> None:
    made = run_in(tmp_path, "init", "--json")
    assert made.returncode == 0, made.stderr
    assert (tmp_path / "toolcrib.toml").is_file()
    listed = run_in(tmp_path, "members", "list", "--json")
    assert listed.returncode == 0, listed.stderr
    assert [m["name"] for m in json.loads(listed.stdout)] == ["owner"]


def test_13_an_env_file_names_the_database(tmp_path: Path) -> None:
    (tmp_path / ".env").write_text(f"TOOLCRIB_DATABASE_URL=sqlite:///{tmp_path / 'org.db'}\n")
    assert run_in(tmp_path, "init").returncode == 0
    assert (tmp_path / "org.db").is_file()
    assert not (tmp_path / "toolcrib.toml").exists()


def test_13_tools_list_shows_the_connected_tools_of_one_connection(desk_db: str) -> None:
    rows = cli_json(desk_db, "tools", "list", "--connection", "desk")
    assert isinstance(rows, list)
    assert "desk__add_numbers" in [r["name"] for r in rows]
    assert {r["connection"] for r in rows} == {"desk"}
    missing = cli(desk_db, "tools", "list", "--connection", "nope", "--json", check=False)
    assert missing.returncode == 1
    assert json.loads(missing.stdout)["error"]["code"] == "not_found"


def test_13_errors_print_their_details_and_as_json_under_json(desk_db: str) -> None:
    needs = cli(desk_db, "call", "desk__add_numbers", "--args", "{}", check=False)
    assert needs.returncode == 1
    assert needs.stderr.startswith("needs_input:")
    assert "missing" in needs.stderr
    bad = cli(
        desk_db, "connections", "add", "Bad Name", "--connector", "X", "--command", "x", "--json", check=False
    )
    assert bad.returncode == 1
    error = json.loads(bad.stdout)["error"]
    assert error["code"] == "invalid_arguments"
    assert "/name" in [e["pointer"] for e in error["errors"]]


def test_13_tokens_list_prints_times_in_iso_8601_and_scopes_as_words(desk_db: str) -> None:
    cli(desk_db, "tokens", "create", "--member", "owner", "--expires", "30")
    grants = cli_json(desk_db, "tokens", "list")
    assert isinstance(grants, list)
    assert any(isinstance(g["expires_at"], str) and ISO.match(g["expires_at"]) for g in grants)
    table = cli(desk_db, "tokens", "list", env={"COLUMNS": "200"}).stdout
    assert "['" not in table
    assert re.search(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d", table)


def test_13_eval_search_takes_database_like_every_command(tmp_path: Path) -> None:
    (tmp_path / "c.jsonl").write_text(
        json.dumps(
            {"id": "t__add", "account": "t", "connector": "T", "name": "add", "description": "Add numbers"}
        )
        + "\n"
    )
    (tmp_path / "q.jsonl").write_text(
        json.dumps({"qid": "1", "query": "add numbers", "gold": ["t__add"]}) + "\n"
    )
    args = ("eval", "search", "--catalog", "c.jsonl", "--queries", "q.jsonl", "--lexical", "--json")
    out = run_in(tmp_path, *args, "--database", f"sqlite:///{tmp_path / 'x.db'}")
    assert out.returncode == 0, out.stderr
    assert "hit@1" in json.loads(out.stdout)


def test_13_connections_add_of_an_unreachable_url_fails_with_its_reason(desk_db: str) -> None:
    url = f"http://127.0.0.1:{free_port()}/mcp"
    out = cli(desk_db, "connections", "add", "gone", "--connector", "Gone", "--url", url, check=False)
    assert out.returncode == 1
    assert out.stderr.startswith("connection_inactive:")
    as_json = cli(desk_db, "connections", "refresh", "gone", "--json", check=False)
    assert as_json.returncode == 1
    assert json.loads(as_json.stdout)["status"] == "error"
    assert json.loads(as_json.stdout)["reason"]
