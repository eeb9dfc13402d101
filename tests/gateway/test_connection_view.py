"""R-13.3: credentials of connections are never returned by a read operation."""

from __future__ import annotations

import json

from toolcrib.gateway.connections.manage import connection_view
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


def test_r13_3_view_of_a_stdio_row_read_without_its_command_names_no_target() -> None:
    view = connection_view(_row(transport="stdio", url=None, command=None))
    assert (view["transport"], view["target"]) == ("stdio", None)


def test_r13_3_a_query_string_key_in_the_url_is_not_shown() -> None:
    view = connection_view(_row(url="https://crm.example/mcp?api_key=sk-live-abcdef123456"))
    assert "sk-live" not in json.dumps(view)
    assert view["target"].startswith("https://crm.example/mcp?")


def test_r13_1_a_malformed_row_is_viewed_as_error_not_raised() -> None:
    view = connection_view(_row(transport="stdio", url=None, command=["a", 1]))
    assert (view["status"], view["target"]) == ("error", None)
    assert "malformed" in view["reason"]
