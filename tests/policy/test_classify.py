"""R-7.4 classification of connected tools, and R-7.3 classification of control-plane operations.

``real_catalog_tools.json`` holds the name and annotations of every tool of the 14 real catalogs
in ``shared/data/catalogs`` (115 tools).
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from toolcrib.errors import ConfigError
from toolcrib.policy import OPERATIONS, classify, classify_operation, name_words
from toolcrib.policy.classify import DESTRUCTIVE_VERBS

CATALOG: list[dict[str, Any]] = json.loads((Path(__file__).parent / "real_catalog_tools.json").read_text())
BY_NAME = {(t["server"], t["name"]): t["annotations"] for t in CATALOG}


def real(server: str, name: str) -> str:
    return classify(name, BY_NAME[(server, name)])


@pytest.mark.parametrize(
    ("name", "words"),
    [
        ("delete_entities", ["delete", "entities"]),
        ("get-resource-links", ["get", "resource", "links"]),
        ("getIssueComments", ["get", "issue", "comments"]),
        ("HTTPGetURL", ["http", "get", "url"]),
        ("list.pages v2", ["list", "pages", "v"]),
    ],
)
def test_r7_4_names_split_on_snake_kebab_camel(name: str, words: list[str]) -> None:
    assert name_words(name) == words


@pytest.mark.parametrize(
    ("server", "name", "risk"),
    [
        ("server-filesystem", "read_file", "read"),
        ("server-filesystem", "list_directory", "read"),
        ("server-filesystem", "create_directory", "write"),
        # write_file, edit_file and move_file carry destructiveHint: true (they overwrite).
        ("server-filesystem", "write_file", "destructive"),
        ("server-filesystem", "move_file", "destructive"),
        ("server-memory", "delete_entities", "destructive"),
        ("server-memory", "create_entities", "write"),
        ("server-memory", "open_nodes", "read"),
        ("mcp-server-git", "git_reset", "destructive"),
        ("mcp-server-git", "git_log", "read"),
        ("mcp-server-git", "git_commit", "write"),
        ("mcp-server-time", "convert_time", "read"),
        # No annotations: the verb decides, or nothing does (write).
        ("server-github", "get_issue", "read"),
        ("server-github", "search_code", "read"),
        ("server-github", "create_pull_request", "write"),
        ("server-github", "merge_pull_request", "write"),
        ("server-slack", "slack_get_users", "read"),
        ("server-slack", "slack_post_message", "write"),
        ("server-brave-search", "brave_web_search", "read"),
        ("server-redis", "delete", "destructive"),
        ("server-redis", "get", "read"),
        ("server-redis", "set", "write"),
        ("server-postgres", "query", "read"),
        ("server-puppeteer", "puppeteer_evaluate", "write"),
        ("server-google-maps", "maps_directions", "write"),
        # readOnlyHint true but a write verb: the most dangerous wins.
        ("server-everything", "trigger-long-running-operation", "write"),
        ("server-everything", "echo", "read"),
    ],
)
def test_r7_4_real_catalog_tools_classify(server: str, name: str, risk: str) -> None:
    assert real(server, name) == risk


def test_r7_4_real_catalog_summary() -> None:
    """The figures quoted in classify.py's docstring: 115 tools, 64 without annotations."""
    counts = Counter(classify(t["name"], t["annotations"]) for t in CATALOG)
    assert len(CATALOG) == 115
    assert sum(1 for t in CATALOG if not t["annotations"]) == 64
    assert counts == {"read": 58, "write": 49, "destructive": 8}


def test_r7_4_real_catalog_alternatives_quoted_in_the_docstring() -> None:
    """Why "first known verb" and why MCP defaults are not applied to missing keys."""

    def leading_word(name: str, annotations: dict[str, Any]) -> str:
        words = name_words(name)
        if set(words) & DESTRUCTIVE_VERBS:
            return "destructive"
        return classify(words[0] if words else "", annotations)  # only the leading word may be a verb

    def mcp_defaults(annotations: dict[str, Any]) -> str:
        if annotations.get("readOnlyHint", False):
            return "read"
        return "destructive" if annotations.get("destructiveHint", True) else "write"

    assert Counter(leading_word(t["name"], t["annotations"]) for t in CATALOG) == {
        "read": 50,
        "write": 57,
        "destructive": 8,
    }
    assert Counter(mcp_defaults(t["annotations"]) for t in CATALOG) == {
        "read": 32,
        "write": 12,
        "destructive": 71,
    }


def test_r7_4_every_delete_named_real_tool_is_destructive() -> None:
    for tool in CATALOG:
        if "delete" in name_words(tool["name"]):
            assert classify(tool["name"], tool["annotations"]) == "destructive", tool["name"]


@pytest.mark.parametrize(
    "name",
    ["delete_page", "removeMember", "destroy-db", "drop_table", "purge_cache", "erase", "revoke_token"],
)
def test_r7_4_destructive_verbs(name: str) -> None:
    assert classify(name, {}) == "destructive"


@pytest.mark.parametrize(
    "name", ["get_page", "listUsers", "read-file", "search", "find_item", "fetch_url", "describe_table"]
)
def test_r7_4_read_verbs(name: str) -> None:
    assert classify(name, {}) == "read"


def test_r7_4_destructive_verb_anywhere_wins() -> None:
    assert classify("bulk_delete_pages", {}) == "destructive"
    assert classify("list_and_delete", {"readOnlyHint": True}) == "destructive"


def test_r7_4_first_known_verb_decides_so_a_later_read_word_does_not_downgrade() -> None:
    assert classify("create_search_index", {}) == "write"
    assert classify("notion_search_pages", {}) == "read"


def test_r7_4_anything_else_is_write() -> None:
    assert classify("frobnicate", {}) == "write"
    assert classify("frobnicate", None) == "write"


def test_r7_4_annotations_read_only_hint_makes_read() -> None:
    assert classify("frobnicate", {"readOnlyHint": True}) == "read"


def test_r7_4_annotations_destructive_hint_makes_destructive() -> None:
    assert classify("get_thing", {"destructiveHint": True}) == "destructive"
    assert classify("get_thing", {"readOnlyHint": True, "destructiveHint": True}) == "destructive"


def test_r7_4_explicit_read_only_false_outranks_a_read_verb() -> None:
    assert classify("get_and_mark", {"readOnlyHint": False}) == "write"


def test_r7_4_missing_annotations_do_not_apply_mcp_defaults() -> None:
    assert classify("get_issue", {}) == "read"
    assert classify("get_issue", {"openWorldHint": True}) == "read"


@pytest.mark.parametrize("override", ["read", "write", "destructive", "forbidden"])
def test_r7_4_admin_override_wins(override: str) -> None:
    assert classify("delete_everything", {"destructiveHint": True}, override) == override
    assert classify("get_page", {"readOnlyHint": True}, override) == override


def test_r7_4_unknown_override_is_a_config_error() -> None:
    with pytest.raises(ConfigError):
        classify("get_page", {}, "harmless")


@pytest.mark.parametrize(
    ("operation", "risk"),
    [
        *[(op, "read") for op in ("list", "get", "search", "read", "explain", "diagnose")],
        *[(op, "write") for op in ("create", "update", "set", "invite", "refresh", "update_role")],
        *[(op, "destructive") for op in ("delete", "remove", "revoke", "suspend", "unset")],
    ],
)
def test_r7_3_control_plane_operation_classification(operation: str, risk: str) -> None:
    assert classify_operation(operation) == risk


def test_r7_3_unknown_operation_falls_back_to_its_verbs_then_write() -> None:
    assert classify_operation("purge_all") == "destructive"
    assert classify_operation("show") == "read"
    assert classify_operation("rotate") == "write"


def test_r10_1_every_listed_operation_has_a_classification_from_the_table() -> None:
    for _resource, operation in OPERATIONS:
        assert classify_operation(operation) in ("read", "write", "destructive")
