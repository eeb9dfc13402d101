"""R-13.3: credentials of connections are never returned by a read operation."""

from __future__ import annotations

import json

from toolcrib.gateway.connections import connection_view
from toolcrib.store.connections import ConnectionRow
from toolcrib.store.crypto import SecretBox


def _row(**values: object) -> ConnectionRow:
    box = SecretBox(b"ZmRlZjAxMjM0NTY3ODlhYmNkZWYwMTIzNDU2Nzg5YWI=")
    base = {
        "name": "crm",
        "connector": "CRM",
        "transport": "http",
        "command": None,
        "url": "https://bob:hunter2-secret@crm.example/mcp",
        "secrets": box.seal({"env": {}, "headers": {"Authorization": "Bearer sk-live-abcdef123456"}}),
        "status": "active",
        "reason": None,
        "tool_count": 3,
        "catalog_version": 1,
    }
    return ConnectionRow(**{**base, **values})  # type: ignore[arg-type]


def test_r13_3_view_shows_neither_headers_nor_url_userinfo() -> None:
    shown = json.dumps(connection_view(_row()))
    assert "hunter2-secret" not in shown
    assert "bob" not in shown
    assert "sk-live" not in shown
    assert "crm.example/mcp" in shown


def test_r13_3_view_of_a_stdio_connection_shows_its_command_not_its_env() -> None:
    row = _row(transport="stdio", url=None, command=["mcp-server-time", "--local-timezone", "UTC"])
    view = connection_view(row)
    assert view["target"] == "mcp-server-time --local-timezone UTC"
    assert "secrets" not in view
