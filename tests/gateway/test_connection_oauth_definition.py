"""The OAuth part of a connection definition is checked whole before anything is saved (#14)."""

from __future__ import annotations

import pytest

from toolcrib.errors import InvalidArguments
from toolcrib.gateway.connections.definition import check_definition


def _pointers(**oauth_and_target: object) -> list[str]:
    with pytest.raises(InvalidArguments) as caught:
        check_definition("desk", "Helpdesk", **oauth_and_target)  # type: ignore[arg-type]
    assert caught.value.code == "invalid_arguments"
    return [e["pointer"] for e in caught.value.errors]


def test_oauth_is_refused_on_a_stdio_connection() -> None:
    assert _pointers(command=["server"], oauth=True) == ["/oauth"]


def test_oauth_settings_are_named_fields_of_strings() -> None:
    assert _pointers(url="https://x.example/mcp", oauth={"token_url": "x"}) == ["/oauth"]
    assert _pointers(url="https://x.example/mcp", oauth={"client_id": 5}) == ["/oauth/client_id"]
    assert _pointers(url="https://x.example/mcp", oauth={"client_secret": "s"}) == ["/oauth/client_secret"]
    assert _pointers(url="https://x.example/mcp", oauth={"per_member": "yes"}) == ["/oauth/per_member"]


def test_oauth_definition_keeps_the_client_and_the_per_member_mark() -> None:
    d = check_definition(
        "desk", "Helpdesk", url="https://x.example/mcp", oauth={"client_id": "c", "per_member": True}
    )
    assert d.oauth == {"client_id": "c", "per_member": True}
    assert check_definition("desk", "Helpdesk", url="https://x.example/mcp", oauth=True).oauth == {}
    assert check_definition("desk", "Helpdesk", url="https://x.example/mcp").oauth is None
