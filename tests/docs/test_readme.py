"""#13: the README's snippets run. Every line of its command-line block runs, in order, against a
demo organization (the crm lines against a local fixture HTTP server with that catalog), and its
Python client example runs against the gateway its `toolcrib serve` line starts."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from tests.conftest import (
    PYTHON,
    ROOT,
    TOOLCRIB,
    Process,
    env_for,
    free_port,
    start_fixture_http,
    toolcrib,
    wait_http,
)

# Two dozen real `toolcrib` processes, each opening the gateway (about 4 s each on a quiet machine).
pytestmark = pytest.mark.timeout(600)

README = (ROOT / "README.md").read_text(encoding="utf-8")
CRM_KEY = "crm-readme-key-0123456789"
CRM_TOOLS = [
    ("search_contacts", "Search contacts by name or email.", {"query": {"type": "string"}}, ["query"], True),
    (
        "create_contact",
        "Create a contact.",
        {"name": {"type": "string"}, "region": {"type": "string"}},
        ["name"],
        False,
    ),
    ("delete_contact", "Delete a contact by id.", {"contact_id": {"type": "string"}}, ["contact_id"], False),
    (
        "sync_contacts",
        "Sync the contacts of a mailing list.",
        {"list_id": {"type": "string"}, "api_key": {"type": "string"}},
        ["list_id"],
        False,
    ),
    ("purge_all", "Delete every contact.", {}, [], False),
]


def _block(heading: str, fence: str) -> str:
    found = re.search(rf"^## {heading}\n.*?^```{fence}\n(.*?)^```", README, re.S | re.M)
    assert found is not None, f"no {fence} block under {heading!r}"
    return found.group(1)


def readme_commands() -> list[str]:
    return [line[2:] for line in _block("Command line", "console").splitlines() if line.startswith("$ ")]


def readme_python() -> str:
    return _block("Point an MCP client at it", "python")


def _env() -> dict[str, str]:
    env = env_for({"PATH": str(Path(sys.executable).parent) + os.pathsep + os.environ.get("PATH", "")})
    env.pop("TOOLCRIB_DATABASE_URL", None)  # the README's lines find the database `init` recorded
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + str(ROOT / "src") + os.pathsep + env["PYTHONPATH"]
    return env


def over_this_process(env: dict[str, str]) -> dict[str, str | None]:
    """``env`` as changes to this process's environment (``None``: unset), for ``toolcrib``."""
    changed: dict[str, str | None] = {k: v for k, v in env.items() if os.environ.get(k) != v}
    return changed | {k: None for k in os.environ if k not in env}


def _write_crm_catalog(cwd: Path) -> Path:
    """The crm tools, as the fixture server serves them and as an evaluation catalog."""
    path = cwd / "catalog.jsonl"
    rows = [
        {
            "id": f"crm__{name}",
            "account": "crm",
            "connector": "CRM",
            "name": name,
            "description": text,
            "inputSchema": {"type": "object", "properties": props, "required": required},
            "annotations": {"readOnlyHint": read_only},
        }
        for name, text, props, required, read_only in CRM_TOOLS
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    intents = [{"qid": "1", "query": "delete a contact", "gold": ["crm__delete_contact"]}]
    (cwd / "intents.jsonl").write_text("".join(json.dumps(q) + "\n" for q in intents), encoding="utf-8")
    return path


@dataclass
class Demo:
    cwd: Path
    env: dict[str, str]
    token: str
    ran: list[tuple[str, subprocess.CompletedProcess[str]]]
    serve_line: str


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Demo:
    cwd = tmp_path_factory.mktemp("readme")
    crm: Process = start_fixture_http(
        {"FIXTURE_CATALOG_FILE": str(_write_crm_catalog(cwd)), "FIXTURE_REQUIRE_BEARER": CRM_KEY}
    )
    env = _env()
    places = {"https://crm.example/mcp": crm.url, "Bearer …": f"Bearer {CRM_KEY}"}
    ran: list[tuple[str, subprocess.CompletedProcess[str]]] = []
    serve_line = ""
    try:
        for line in readme_commands():
            for placeholder, value in places.items():
                line = line.replace(placeholder, value)
            args = shlex.split(line, comments=True)
            assert args[0] == "toolcrib"
            if args[1] == "serve":
                serve_line = line  # a server: run by the test that talks to it
                continue
            done = toolcrib(args[1:], cwd=cwd, env=over_this_process(env))
            ran.append((line, done))
    finally:
        crm.stop()
    token = json.loads(next(d.stdout for line, d in ran if line.startswith("toolcrib init")))["token"]
    return Demo(cwd, env, token, ran, serve_line)


def test_13_every_readme_command_line_exits_0(demo: Demo) -> None:
    assert len(demo.ran) >= 15
    failed = [(line, d.returncode, d.stderr[-500:]) for line, d in demo.ran if d.returncode != 0]
    assert failed == []
    assert demo.serve_line


def test_13_readme_python_example_runs_against_the_readme_serve_line(demo: Demo) -> None:
    port = free_port()
    args = shlex.split(demo.serve_line.replace("--port 8765", f"--port {port}"), comments=True)
    log = (demo.cwd / "serve.log").open("wb")
    proc = subprocess.Popen([*TOOLCRIB, *args[1:]], cwd=demo.cwd, env=demo.env, stdout=log, stderr=log)
    server = Process(proc, f"http://127.0.0.1:{port}", log)
    try:
        wait_http(server.url + "/healthz", timeout=60, proc=proc)
        script = readme_python().replace("http://127.0.0.1:8765/mcp", server.url + "/mcp")
        script = script.replace("tcp_…", demo.token)
        done = subprocess.run(
            [PYTHON, "-c", script], cwd=demo.cwd, env=demo.env, capture_output=True, text=True, timeout=180
        )
    finally:
        server.stop()
    assert done.returncode == 0, done.stderr[-2000:]
    assert "Asia/Tokyo" in done.stdout
    logged = (demo.cwd / "serve.log").read_text()
    assert "event=tool_call member=owner operation=execute_tool outcome=ok" in logged
    assert demo.token not in logged
