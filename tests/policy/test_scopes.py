"""R-7.3 scopes: one per classification, plus mcp:tools; parsing refuses unknown scopes."""

from __future__ import annotations

import pytest

from toolcrib.errors import ConfigError, Forbidden
from toolcrib.policy import SCOPES, parse_scopes, scope_for


def test_r7_3_the_four_scopes() -> None:
    assert {"mcp:read", "mcp:write", "mcp:destructive", "mcp:tools"} == SCOPES


@pytest.mark.parametrize(
    ("risk", "scope"), [("read", "mcp:read"), ("write", "mcp:write"), ("destructive", "mcp:destructive")]
)
def test_r7_3_each_classification_needs_its_scope(risk: str, scope: str) -> None:
    assert scope_for(risk) == scope


def test_r7_4_forbidden_has_no_scope() -> None:
    with pytest.raises(Forbidden):
        scope_for("forbidden")


def test_scope_for_unknown_classification_is_a_config_error() -> None:
    with pytest.raises(ConfigError):
        scope_for("dangerous")


def test_parse_scopes_accepts_spaces_and_commas() -> None:
    assert parse_scopes("mcp:tools mcp:read,mcp:write  ") == {"mcp:tools", "mcp:read", "mcp:write"}
    assert parse_scopes("") == frozenset()


def test_parse_scopes_refuses_unknown_scope() -> None:
    with pytest.raises(ConfigError):
        parse_scopes("mcp:tools mcp:admin")


def test_parse_scopes_lenient_drops_foreign_oauth_scopes() -> None:
    assert parse_scopes("openid profile mcp:tools", strict=False) == {"mcp:tools"}
