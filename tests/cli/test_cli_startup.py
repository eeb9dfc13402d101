"""A one-shot command that reaches no upstream does not load the MCP SDK (about a second of every
such command was its import): the supervisor it runs imports the SDK at its first session or
OAuth flow. Nor does it load what only serving, searching or fetching uses (#33): numpy and the
model's runtime (the search index builds at its first catalog), the web stack and the console's
templates, authlib, httpx2 (the guarded transport loads with its first client), jsonschema (a
sync validates), Alembic (a database at the newest schema is not migrated). The commands run for
real, on a real SQLite file, in a process of their own."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest
from tests.conftest import ROOT, cli, env_for

SDK = ("mcp", "mcp_types")
HEAVY = (
    *SDK,
    "numpy",
    "onnxruntime",
    "starlette",
    "uvicorn",
    "jinja2",
    "authlib",
    "alembic",
    "httpx2",
    "jsonschema",
    "rich",
)
"""Packages a one-shot command that reaches no upstream never loads (rich: only to print a table)."""

PROBE = f"""
import gc, json, sys
sys.argv = ["toolcrib", *sys.argv[1:]]
from toolcrib.cli.main import app
try:
    app()
except SystemExit as exit:
    code = exit.code
else:
    code = 0
loaded = sorted({{name.split(".")[0] for name in sys.modules}} & {set(HEAVY)!r})
own = sorted(name for name in sys.modules if name.startswith("toolcrib."))
layers = sorted({{name.split(".")[1] for name in own}})
report = {{"exit": code, "loaded": loaded, "layers": layers, "modules": own, "frozen": gc.get_freeze_count()}}
print(json.dumps(report), file=sys.stderr)
"""


@pytest.fixture(scope="module")
def db_url(tmp_path_factory: pytest.TempPathFactory) -> str:
    url = f"sqlite:///{tmp_path_factory.mktemp('startup') / 'toolcrib.db'}"
    cli(url, "init", "--json")
    return url


def probed(db_url: str, command: list[str]) -> tuple[dict[str, Any], subprocess.CompletedProcess[str]]:
    """``toolcrib COMMAND`` run in a process of its own; its exit and the ``HEAVY`` packages it loaded."""
    done = subprocess.run(
        [sys.executable, "-c", PROBE, *command, "--database", db_url],
        cwd=ROOT,
        env=env_for(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    return json.loads(done.stderr.strip().splitlines()[-1]), done


@pytest.mark.parametrize(
    "command",
    [
        ["connections", "list"],
        ["members", "list"],
        ["restrictions", "list"],
        ["frozen", "list"],
        ["limits", "list"],
    ],
    ids=" ".join,
)
def test_a_command_that_reaches_no_upstream_loads_no_mcp_sdk(db_url: str, command: list[str]) -> None:
    """Nor anything else of ``HEAVY`` but rich, which prints its table."""
    report, done = probed(db_url, command)
    assert (report["exit"], report["loaded"]) == (0, ["rich"]), done.stderr[-2000:]
    assert done.stdout.strip()  # the command answered (a table, even an empty one)


@pytest.mark.parametrize(
    "command",
    [
        ["connections", "list"],
        ["members", "list"],
        ["tokens", "list"],
        ["limits", "list"],
        ["restrictions", "list"],
        ["frozen", "list"],
    ],
    ids=" ".join,
)
def test_a_one_shot_command_imports_no_mcp_sdk_no_search_and_no_web(db_url: str, command: list[str]) -> None:
    """#33: a command that reads the organization imports what it uses: not the MCP SDK, not the
    search engine (``toolcrib.search``: the index builds in a serving gateway), not the web face."""
    report, done = probed(db_url, command)
    assert report["exit"] == 0, done.stderr[-2000:]
    assert [name for name in report["loaded"] if name in SDK] == []
    assert {"search", "web", "eval"} & set(report["layers"]) == set()
    assert {"cli", "gateway", "store"} <= set(report["layers"])  # the probe sees toolcrib's own imports


def test_a_command_builds_its_own_group_only_and_not_the_operation_table(db_url: str) -> None:
    """#33: typer builds the group the command line names, and the operation table's commands (and
    so the table's pydantic models) only when the name asked for is none of the group's own."""
    report, done = probed(db_url, ["connections", "list"])
    assert report["exit"] == 0, done.stderr[-2000:]
    assert "toolcrib.cli.admin" in report["modules"]  # the connections group
    assert {"toolcrib.operations", "toolcrib.cli.approvals", "toolcrib.cli.eval"} & set(
        report["modules"]
    ) == set()


GATEWAY_WORLD = (
    "toolcrib.gateway.core",
    "toolcrib.gateway.process",
    "toolcrib.gateway.live_catalog",
    "toolcrib.gateway.connections.manage",
    "toolcrib.gateway.connections.catalogs",
    "toolcrib.gateway.connections.upstream_oauth",
    "toolcrib.gateway.audit.delivery",
    "toolcrib.gateway.audit.sinks",
    "toolcrib.gateway.discovery.meaning",
    "toolcrib.gateway.discovery.examples",
    "toolcrib.gateway.governance.buckets",
    "toolcrib.gateway.identity.bearer",
    "toolcrib.upstream.supervisor",
    "toolcrib.store.leases",
    "toolcrib.store.instances",
)
"""The gateway and what it composes: the catalogs, the sessions' supervisor, the audit deliverer
and its sinks, the index and meaning, learned examples, rate-limit buckets, bearer checks."""


@pytest.mark.parametrize(
    "command",
    [["connections", "list"], ["members", "list"], ["tokens", "list"], ["limits", "list"]],
    ids=" ".join,
)
def test_a_command_that_only_reads_the_store_opens_no_gateway(db_url: str, command: list[str]) -> None:
    """#33: such a command opens the store and the policy snapshot alone (``gateway.reading``):
    none of the gateway's world is imported, only to be left unused by a read."""
    report, done = probed(db_url, command)
    assert report["exit"] == 0, done.stderr[-2000:]
    assert "toolcrib.gateway.reading" in report["modules"]  # the probe sees the read path's modules
    assert sorted(set(GATEWAY_WORLD) & set(report["modules"])) == []
    if command != ["tokens", "list"]:  # which lists each grant with its OAuth details
        assert {"toolcrib.store.oauth_server", "toolcrib.store.idp_vouches"} & set(report["modules"]) == set()


def test_a_command_run_as_a_program_leaves_what_it_made_out_of_the_exit_collection(db_url: str) -> None:
    """#33: once ``toolcrib`` (the program, ``app()``) has run its command, the objects it made are
    frozen out of the garbage collector, so the interpreter's exit does not walk them all again."""
    report, done = probed(db_url, ["connections", "list"])
    assert report["exit"] == 0, done.stderr[-2000:]
    assert report["frozen"] > 10_000  # the modules, the commands, the rows: all of them


def test_a_command_that_prints_json_loads_none_of_the_heavy_packages(db_url: str) -> None:
    report, done = probed(db_url, ["connections", "list", "--json"])
    assert (report["exit"], report["loaded"]) == (0, []), done.stderr[-2000:]
    assert isinstance(json.loads(done.stdout), list)


def test_the_probe_sees_the_sdk_when_a_command_loads_it(db_url: str) -> None:
    """The same probe around ``connections add`` of a stdio server: that command starts a session,
    so the SDK is loaded (the probe would otherwise pass whatever the commands import)."""
    fixture = [sys.executable, "-m", "tests.fixtures.fixture_server"]
    command = ["connections", "add", "desk", "--connector", "Helpdesk", "--command", " ".join(fixture)]
    report, done = probed(db_url, command)
    assert report["exit"] == 0, done.stderr[-2000:]
    assert [name for name in report["loaded"] if name in SDK] == list(SDK), done.stderr[-2000:]
