"""Which parts of a connection URL are secrets (R-13.7): the userinfo, and a query value whose name
says credential by the words of frozen values (R-9.2); nothing else is touched."""

from __future__ import annotations

import pytest

from toolcrib.gateway.connections.url_secrets import (
    connect_url,
    placeholder_url,
    public_url,
    sealed_url,
    url_secret_values,
)


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("https://crm.example/mcp", "https://crm.example/mcp"),
        (
            "https://crm.example/mcp?keyword=a&monkey=b&flag",
            "https://crm.example/mcp?keyword=a&monkey=b&flag",
        ),
        ("https://u:p@crm.example:8443/mcp", "https://***@crm.example:8443/mcp"),
        ("https://crm.example/mcp?api_key=s1&region=eu", "https://crm.example/mcp?api_key=***&region=eu"),
        (
            "https://crm.example/mcp?apiKey=s1&access_token=s2",
            "https://crm.example/mcp?apiKey=***&access_token=***",
        ),
        (
            "https://crm.example/mcp?api%5Fkey=s1&signature=s2",
            "https://crm.example/mcp?api%5Fkey=***&signature=***",
        ),
        ("https://crm.example/mcp?token=", "https://crm.example/mcp?token="),
        ("https://x.blob.example/mcp?sv=2024&sig=abc%2Bd", "https://x.blob.example/mcp?sv=2024&sig=***"),
    ],
)
def test_r13_7_a_urls_userinfo_and_credential_query_values_are_shown_as_stars(url: str, shown: str) -> None:
    assert public_url(url) == shown
    assert public_url(shown) == shown  # what is stored reads the same again
    assert sealed_url(url) == ({} if shown == url else {"url": url})


def test_r13_7_export_names_each_secret_of_a_url_and_redaction_knows_every_spelling() -> None:
    url = "https://robot:p%40ss@crm.example/mcp?api_key=k%2F1&region=eu"
    refs = placeholder_url(url, lambda part: "${env:CRM_" + part.upper() + "}")
    assert refs == "https://${env:CRM_URL_USERINFO}@crm.example/mcp?api_key=${env:CRM_URL_API_KEY}&region=eu"
    assert {"robot:p%40ss", "p%40ss", "p@ss", "k%2F1", "k/1"} <= set(url_secret_values(url))
    assert not {"eu", "robot"} & set(url_secret_values(url))  # nor the user name alone


def test_r13_7_the_url_connected_to_is_the_sealed_one_else_the_stored_one() -> None:
    assert connect_url("https://***@h/mcp", {"url": "https://u:p@h/mcp"}) == "https://u:p@h/mcp"
    assert connect_url("https://u:p@h/mcp", {}) == "https://u:p@h/mcp"  # a row stored before sealing
