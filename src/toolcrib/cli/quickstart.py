"""``make run``: an organization ready to use, with real MCP servers from PyPI connected."""

from __future__ import annotations

import contextlib
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import anyio

from toolcrib.cli.common import console, escape
from toolcrib.errors import ConfigError
from toolcrib.gateway.connections import manage as connections
from toolcrib.gateway.identity import members
from toolcrib.gateway.process import open_gateway
from toolcrib.settings import Settings

__all__ = ["prepare"]


def _demo_repository(base: Path) -> Path:
    """A small git repository for ``mcp-server-git`` to look at."""
    repo = base / "demo-repo"
    if not (repo / ".git").exists():
        repo.mkdir(parents=True, exist_ok=True)
        (repo / "README.md").write_text("# demo\n\nA repository for toolcrib's quickstart.\n")
        env = {"GIT_AUTHOR_NAME": "toolcrib", "GIT_AUTHOR_EMAIL": "demo@toolcrib.invalid"}
        env |= {"GIT_COMMITTER_NAME": "toolcrib", "GIT_COMMITTER_EMAIL": "demo@toolcrib.invalid"}
        for args in (["init", "-q"], ["add", "README.md"], ["commit", "-q", "-m", "first commit"]):
            subprocess.run(["git", *args], cwd=repo, check=True, env=env | {"PATH": "/usr/bin:/bin"})
    return repo


def _server(name: str) -> str | None:
    found = shutil.which(name) or str(Path(sys.executable).parent / name)
    return found if Path(found).exists() else None


async def _prepare(settings: Settings, state: Path) -> dict[str, str]:
    async with open_gateway(settings, follow_changes=False) as gw:
        out: dict[str, str] = {}
        with contextlib.suppress(ConfigError):  # the organization has its owner already
            await members.init_owner(gw.store, "owner")
        operator = await members.operator_principal(gw.store)
        token_file = state / "demo-token"
        if not token_file.exists():
            scopes = "mcp:tools,mcp:read,mcp:write,mcp:destructive"
            _, token = await members.create_token(gw.store, "owner", scopes, actor=operator)
            token_file.write_text(token)
        out["token"] = token_file.read_text().strip()
        wanted: dict[str, tuple[str, str | None, list[str]]] = {
            "time": ("Time", _server("mcp-server-time"), [])
        }
        git = _server("mcp-server-git")
        if git and shutil.which("git"):
            wanted["git"] = ("Git", git, ["--repository", str(_demo_repository(state))])
        for name, (label, command, args) in wanted.items():
            if command and name not in gw.catalog.connections:
                console.print(f"connecting [bold]{name}[/bold] ({escape(command)}) ...")
                row = await connections.add_connection(
                    gw, name, connector=label, command=[command, *args], actor=operator
                )
                out[name] = f"{row.status} ({row.tool_count} tools){' — ' + row.reason if row.reason else ''}"
        return out


def prepare(settings: Settings) -> None:
    """Idempotent: owner, a demo token, and the demo connections; prints how to connect."""
    db_path = settings.sqlite_path()
    state = (db_path.parent if db_path else Path(tempfile.gettempdir())) / ".toolcrib"
    state.mkdir(parents=True, exist_ok=True)
    out = anyio.run(_prepare, settings, state)
    url = f"{settings.resource_url}/mcp"
    for name, status in out.items():
        if name != "token":
            console.print(f"connected [bold]{name}[/bold]: {escape(status)}")
    config = {
        "mcpServers": {
            "toolcrib": {"type": "http", "url": url, "headers": {"Authorization": f"Bearer {out['token']}"}}
        }
    }
    console.print(f"\nEndpoint: [bold]{url}[/bold]\nToken:    {out['token']}\n")
    console.print("Client configuration (e.g. .mcp.json):")
    print(json.dumps(config, indent=2))
