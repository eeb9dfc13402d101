"""Gateway names of connections' prompts and resources (R-16.1, #34): pure, round-trip."""

from __future__ import annotations

import pytest

from toolcrib.gateway.resources.naming import (
    Cursor,
    gateway_uri,
    parse_gateway_uri,
    split_prompt_name,
    template_matches,
)


@pytest.mark.parametrize(
    "original",
    ["docs://handbook", "file:///etc/x?y=1#z", "https://example.com/a/b", "ui://weather/forecast", "a"],
)
def test_r16_1_a_gateway_uri_routes_back_to_its_account_and_original(original: str) -> None:
    for account in ("desk", "desk-two", "0ps"):
        assert parse_gateway_uri(gateway_uri(account, original)) == (account, original)


def test_r16_3_a_view_keeps_the_ui_scheme_hosts_render() -> None:
    assert gateway_uri("desk", "ui://weather/forecast") == "ui://toolcrib/desk/weather/forecast"
    assert parse_gateway_uri("ui://weather/forecast") is None  # not the gateway's: unknown


@pytest.mark.parametrize(
    "uri",
    ["docs://handbook", "toolcrib://", "toolcrib://desk", "toolcrib://desk/", "toolcrib://Desk/x",
     "toolcrib://../x", "ui://toolcrib/desk/", "toolcrib://" + "a" * 41 + "/x", "toolcrib://d/" + "x" * 9000],
)  # fmt: skip
def test_r16_2_what_is_not_a_gateway_uri_is_refused(uri: str) -> None:
    assert parse_gateway_uri(uri) is None


def test_r16_1_prompt_names_split_at_the_first_double_underscore() -> None:
    assert split_prompt_name("desk__summarize__ticket") == ("desk", "summarize__ticket")
    assert split_prompt_name("summarize") is None
    assert split_prompt_name("Desk__x") is None


def test_r16_1_a_filled_template_matches_its_template() -> None:
    template = "toolcrib://desk/tickets://{ticket_id}"
    assert template_matches("tickets://{ticket_id}", "tickets://42")
    assert not template_matches("tickets://{ticket_id}", "tickets://42/more")
    assert template_matches("files://{+path}", "files://a/b/c")
    assert template_matches("search://q{?term,limit}", "search://q?term=x&limit=2")
    assert parse_gateway_uri(template.replace("{ticket_id}", "7")) == ("desk", "tickets://7")


def test_r16_1_a_cursor_is_opaque_and_one_not_handed_out_is_refused() -> None:
    cursor = Cursor("resources", "desk", 100).encode()
    assert "desk" not in cursor
    assert Cursor.decode("resources", cursor) == Cursor("resources", "desk", 100)
    assert Cursor.decode("prompts", cursor) is None  # another listing's
    for bad in ("", "x", "!!!", "e30", Cursor("resources", "desk", -1).encode(), "a" * 600):
        assert Cursor.decode("resources", bad) is None


def test_r16_2_matching_a_template_takes_no_backtracking_whatever_the_template_and_uri() -> None:
    """A template from an upstream and a URI from a caller: a regex of nested or adjacent stars
    would take exponential or high-polynomial time here; the matcher walks reachable positions."""
    hostile = "x://{a}a{b}a{c}a{d}a{e}a{.f}{;g}b"
    assert not template_matches(hostile, "x://" + "a" * 8000)
    assert not template_matches("x://{.a}{.b}{.c}y", "x://" + "." * 8000)
    assert template_matches(hostile, "x://aaaaab")
