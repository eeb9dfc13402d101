"""A one-shot command that reaches no upstream does not load the MCP SDK (about a second of every
such command was its import): the supervisor it runs imports the SDK at its first session or
OAuth flow. The commands run for real, on a real SQLite file, in a process of their own."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from tests.conftest import ROOT, cli, env_for

SDK = ("mcp", "mcp_types")

PROBE = """
import json, sys
sys.argv = ["toolcrib", *sys.argv[1:]]
from toolcrib.cli.main import app
try:
    app()
except SystemExit as exit:
    code = exit.code
else:
    code = 0
loaded = sorted({name.split(".")[0] for name in sys.modules} & {"mcp", "mcp_types"})
print(json.dumps({"exit": code, "loaded": loaded}), file=sys.stderr)
"""


@pytest.fixture(scope="module")
def db_url(tmp_path_factory: pytest.TempPathFactory) -> str:
    url = f"sqlite:///{tmp_path_factory.mktemp('startup') / 'toolcrib.db'}"
    cli(url, "init", "--json")
    return url


def probed(db_url: str, command: list[str]) -> tuple[dict[str, object], subprocess.CompletedProcess[str]]:
    """``toolcrib COMMAND`` run in a process of its own; its exit and the SDK packages it loaded."""
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
    report, done = probed(db_url, command)
    assert report == {"exit": 0, "loaded": []}, done.stderr[-2000:]
    assert done.stdout.strip()  # the command answered (a table, even an empty one)


def test_the_probe_sees_the_sdk_when_a_command_loads_it(db_url: str) -> None:
    """The same probe around ``connections add`` of a stdio server: that command starts a session,
    so the SDK is loaded (the probe would otherwise pass whatever the commands import)."""
    fixture = [sys.executable, "-m", "tests.fixtures.fixture_server"]
    command = ["connections", "add", "desk", "--connector", "Helpdesk", "--command", " ".join(fixture)]
    report, done = probed(db_url, command)
    assert report == {"exit": 0, "loaded": list(SDK)}, done.stderr[-2000:]
