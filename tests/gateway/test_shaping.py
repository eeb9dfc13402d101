"""Result shaping: redaction then caps (SPEC R-12.1, R-12.2, R-12.3's ``full``)."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

import pytest

from toolcrib.gateway.calls.shaping import (
    DEPTH_MARKER,
    REDACTED,
    TRUNCATED_KEY,
    Caps,
    attach_result_id,
    cap_value,
    redact_text,
    redact_value,
    shape_result,
)

CONNECTION_SECRET = "conn-Secret-9f8e7d"


def nested(levels: int) -> dict[str, Any]:
    """``{"a": {"a": ... {"leaf": 1}}}`` with ``levels`` objects."""
    value: dict[str, Any] = {"leaf": 1}
    for _ in range(levels - 1):
        value = {"a": value}
    return value


def object_depth(value: Any) -> int:
    """How many containers deep ``value`` goes (a scalar is 0)."""
    if isinstance(value, dict):
        return 1 + max((object_depth(v) for v in value.values()), default=0)
    if isinstance(value, list):
        return 1 + max((object_depth(v) for v in value), default=0)
    return 0


def text_of(result: dict[str, Any]) -> str:
    return "\n".join(b["text"] for b in result["content"] if b.get("type") == "text")


# --- caps (R-12.1) ----------------------------------------------------------------------------


def test_r12_1_long_string_is_cut_and_flagged_in_both_views() -> None:
    shaped = shape_result({"content": [], "structuredContent": {"s": "x" * 40_000}}, secrets=[])
    assert shaped.truncated
    assert shaped.result["structuredContent"]["s"] == "x" * 32_000
    assert shaped.result["structuredContent"][TRUNCATED_KEY] is True
    assert "toolcrib_truncated: true" in text_of(shaped.result)


def test_r12_1_array_keeps_its_first_200_items() -> None:
    capped, cut = cap_value({"items": list(range(250))})
    assert cut
    assert capped["items"] == list(range(200))


def test_r12_1_object_keeps_its_first_200_keys() -> None:
    capped, cut = cap_value({f"k{i}": i for i in range(250)})
    assert cut
    assert list(capped) == [f"k{i}" for i in range(200)]


def test_r12_1_nesting_deeper_than_8_levels_becomes_a_marker() -> None:
    capped, cut = cap_value(nested(12))
    assert cut
    assert object_depth(capped) == 8
    inner = capped
    for _ in range(7):
        inner = inner["a"]
    assert inner["a"] == DEPTH_MARKER


def test_r12_1_values_at_the_limits_are_not_cut() -> None:
    at_limits = {
        "s": "x" * 32_000,
        "items": list(range(200)),
        "keys": {f"k{i}": i for i in range(199)} | {"deep": nested(6)},
    }
    assert object_depth({"keys": {"deep": nested(6)}}) == 8
    shaped = shape_result({"content": [], "structuredContent": at_limits}, secrets=[])
    assert not shaped.truncated
    assert shaped.full is None
    assert shaped.result["structuredContent"] == at_limits


def test_r12_1_custom_caps_apply() -> None:
    capped, cut = cap_value({"s": "abcdef", "l": [1, 2, 3]}, Caps(max_string=3, max_items=2))
    assert cut
    assert capped == {"s": "abc", "l": [1, 2]}


def test_r12_1_json_object_in_text_is_capped_as_json_and_flagged() -> None:
    text = json.dumps({"rows": list(range(300)), "name": "report"})
    shaped = shape_result({"content": [{"type": "text", "text": text}]}, secrets=[])
    assert shaped.truncated
    body = json.loads(shaped.result["content"][0]["text"])
    assert body == {"rows": list(range(200)), "name": "report", TRUNCATED_KEY: True}
    assert shaped.result["content"][-1]["text"].startswith("toolcrib_truncated: true")


def test_r12_1_json_array_in_text_is_capped_as_json() -> None:
    text = json.dumps([{"id": i} for i in range(500)])
    shaped = shape_result({"content": [{"type": "text", "text": text}]}, secrets=[])
    assert shaped.truncated
    assert json.loads(shaped.result["content"][0]["text"]) == [{"id": i} for i in range(200)]


def test_r12_1_json_text_within_caps_keeps_its_formatting() -> None:
    text = json.dumps({"a": [1, 2, 3]}, indent=4)
    shaped = shape_result({"content": [{"type": "text", "text": text}]}, secrets=[])
    assert not shaped.truncated
    assert shaped.result["content"] == [{"type": "text", "text": text}]


def test_r12_1_plain_long_text_is_cut_at_32000_characters() -> None:
    text = "word " * 10_000
    shaped = shape_result({"content": [{"type": "text", "text": text}], "isError": False}, secrets=[])
    assert shaped.truncated
    assert shaped.result["content"][0]["text"] == text[:32_000]
    assert shaped.result["isError"] is False


def test_r12_1_embedded_resource_text_is_capped() -> None:
    block = {"type": "resource", "resource": {"uri": "file:///a", "text": "y" * 33_000}}
    shaped = shape_result({"content": [block]}, secrets=[])
    assert shaped.truncated
    assert len(shaped.result["content"][0]["resource"]["text"]) == 32_000


def test_r12_3_attach_result_id_names_the_stored_result_in_both_views() -> None:
    shaped = shape_result({"content": [], "structuredContent": {"l": list(range(201))}}, secrets=[])
    named = attach_result_id(shaped.result, "res_123")
    assert named["structuredContent"]["toolcrib_result_id"] == "res_123"
    assert "toolcrib_result_id: res_123" in text_of(named)
    assert "toolcrib_result_id" not in shaped.result["structuredContent"]


# --- redaction (R-12.2) -----------------------------------------------------------------------

CREDENTIALS = {
    "bearer": ("Authorization: Bearer abc123def456ghi789jkl", "abc123def456ghi789jkl"),
    "jwt": (
        "token=eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ1c2VyIn0.c2lnbmF0dXJlLXZhbHVl done",
        "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ1c2VyIn0.c2lnbmF0dXJlLXZhbHVl",
    ),
    "pem": (
        "key:\n-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA7\nabcDEF==\n-----END RSA PRIVATE KEY-----\n",
        "MIIEowIBAAKCAQEA7",
    ),
    "aws_key_id": ("id AKIAIOSFODNN7EXAMPLE in use", "AKIAIOSFODNN7EXAMPLE"),
    "aws_session_key_id": ("ASIAJEXAMPLEXEG2JICE,", "ASIAJEXAMPLEXEG2JICE"),
    "aws_secret": (
        "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\n",
        "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    ),
    "github_classic": ("ghp_1234567890abcdefghijABCDEFGHIJ123456", "ghp_1234567890abcdefghij"),
    "github_oauth": ("gho_16C7e42F292c6912E7710c838347Ae178B4a", "16C7e42F292c6912E7710c"),
    "github_app": ("use ghs_abcdefghijklmnopqrstuvwxyz0123456789", "ghs_abcdefghijklmnop"),
    "github_pat": ("github_pat_11ABCDEFG0123456789_abcdefghijklmnop", "11ABCDEFG0123456789"),
    "slack": ("xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx", "1234567890123-AbCd"),
    "stripe": ("sk_live_4eC39HqLyjWDarjtT1zdp7dc", "4eC39HqLyjWDarjtT1zdp7dc"),
    "stripe_restricted": ("rk_live_51H8abcDEFghiJKLmnoPQR", "51H8abcDEFghiJKLmnoPQR"),
    "openai": ("OPENAI: sk-proj-abcdefghijklmnopqrstuvwxyz012345", "abcdefghijklmnopqrstuvwxyz012345"),
    "anthropic": ("sk-ant-api03-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789", "AbCdEfGhIjKlMnOpQrStUvWxYz"),
    "google": ("key=AIzaSyDaGmWKa4JsXZ-HjGw7ISLn_3namBGewQe", "SyDaGmWKa4JsXZ-HjGw7ISLn"),
    "api_key_query": ("GET /v1?api_key=Zx81kQ&page=2", "Zx81kQ"),
    "password_env": ("DB_PASSWORD=hunter2\nDB_HOST=db", "hunter2"),
    "password_json_text": ('{"password": "correct horse battery"}', "correct horse battery"),
    "camel_case_secret": ('{"clientSecret":"abc"}', '"abc"'),
    "yaml_secret": ("client_secret: s3cr3t!value\n", "s3cr3t!value"),
}


@pytest.mark.parametrize(("text", "secret"), CREDENTIALS.values(), ids=CREDENTIALS.keys())
def test_r12_2_credential_shaped_values_are_redacted(text: str, secret: str) -> None:
    redacted = redact_text(text, [])
    assert secret not in redacted
    assert REDACTED in redacted


def test_r12_2_redaction_keeps_the_words_around_a_credential() -> None:
    assert redact_text("Authorization: Bearer abc123def456ghi789", []) == f"Authorization: Bearer {REDACTED}"
    assert redact_text("DB_PASSWORD=hunter2 ok", []) == f"DB_PASSWORD={REDACTED} ok"
    assert redact_text('{"password": "a b"}', []) == f'{{"password": "{REDACTED}"}}'


NOT_CREDENTIALS = {
    "uuid": "request 123e4567-e89b-12d3-a456-426614174000 accepted",
    "git_sha": "commit 0123456789abcdef0123456789abcdef01234567 merged",
    "prose": "The password must be at least 8 characters; keep your secret safe.",
    "bearer_prose": "Bearer authentication is described in RFC 6750.",
    "password_label": "Password: required",
    "secretary": "secretary: Alice Jones",
    "page_token": '{"nextPageToken": "CiAKGjBpNDd2Nmp2Zml2cXRwYjBpOXA0dHgy"}',
    "word_with_prefix": "the task-force1234567890abcdefghijk met; xAKIAIOSFODNN7EXAMPLE",
    "short_eyj": "eyJhbGci is how a JWT header starts",
}


@pytest.mark.parametrize("text", NOT_CREDENTIALS.values(), ids=NOT_CREDENTIALS.keys())
def test_r12_2_ordinary_text_is_not_redacted(text: str) -> None:
    assert redact_text(text, []) == text
    assert redact_value({"v": text}, []) == {"v": text}


def test_r12_2_connection_secrets_are_redacted_everywhere_keys_included() -> None:
    value = {"note": f"token is {CONNECTION_SECRET}.", CONNECTION_SECRET: [CONNECTION_SECRET]}
    redacted = redact_value(value, [CONNECTION_SECRET])
    assert CONNECTION_SECRET not in json.dumps(redacted)
    assert redacted == {"note": f"token is {REDACTED}.", REDACTED: [REDACTED]}


def test_r12_2_secrets_shorter_than_six_characters_are_not_redacted() -> None:
    assert redact_text("admin logged in", ["admin"]) == "admin logged in"


def test_r12_2_the_longer_of_overlapping_secrets_is_redacted_whole() -> None:
    assert redact_text("x abcdef123456 y", ["abcdef", "abcdef123456"]) == f"x {REDACTED} y"


def test_r12_2_values_of_credential_named_keys_are_redacted() -> None:
    value = {
        "user": "ann",
        "password": "pw",
        "Authorization": "Basic YW5uOnB3",
        "aws": {"Client-Secret": "zz"},
        "pageToken": "p1",
    }
    assert redact_value(value, []) == {
        "user": "ann",
        "password": REDACTED,
        "Authorization": REDACTED,
        "aws": {"Client-Secret": REDACTED},
        "pageToken": "p1",
    }


def test_r12_2_binary_payloads_are_left_alone() -> None:
    image = {"type": "image", "data": "AKIAIOSFODNN7EXAMPLEAAAA", "mimeType": "image/png"}
    shaped = shape_result({"content": [image]}, secrets=[])
    assert shaped.result["content"] == [image]


def test_r12_2_redaction_runs_before_the_cut() -> None:
    """A secret straddling the 32,000-character cut must not leave its first half behind."""
    text = "a" * 31_995 + " " + CONNECTION_SECRET + " tail"
    shaped = shape_result({"content": [{"type": "text", "text": text}]}, secrets=[CONNECTION_SECRET])
    assert CONNECTION_SECRET[:4] not in shaped.result["content"][0]["text"]
    assert shaped.result["content"][0]["text"].endswith(REDACTED[:4])


# --- full (R-12.3) ----------------------------------------------------------------------------


def test_r12_3_full_holds_the_redacted_uncut_result_only_when_cut() -> None:
    rows = [{"n": i, "key": CONNECTION_SECRET} for i in range(300)]
    result = {"content": [{"type": "text", "text": json.dumps(rows)}], "structuredContent": {"rows": rows}}
    shaped = shape_result(result, secrets=[CONNECTION_SECRET])
    assert shaped.truncated
    assert shaped.full is not None
    assert len(shaped.full["structuredContent"]["rows"]) == 300
    assert TRUNCATED_KEY not in shaped.full["structuredContent"]
    assert len(json.loads(shaped.full["content"][0]["text"])) == 300
    assert CONNECTION_SECRET not in json.dumps(shaped.full)
    assert CONNECTION_SECRET not in json.dumps(shaped.result)

    small = shape_result({"content": [], "structuredContent": {"k": CONNECTION_SECRET}}, secrets=[])
    assert not small.truncated
    assert small.full is None


# --- size and speed ---------------------------------------------------------------------------


def test_r12_1_five_megabyte_string_is_shaped() -> None:
    text = "lorem ipsum dolor sit amet 42 " * (5_000_000 // 30) + CONNECTION_SECRET
    shaped = shape_result(
        {"content": [{"type": "text", "text": text}], "structuredContent": {"body": text}},
        secrets=[CONNECTION_SECRET],
    )
    assert shaped.truncated
    assert shaped.result["content"][0]["text"] == text[:32_000]
    assert len(shaped.result["structuredContent"]["body"]) == 32_000
    assert shaped.full is not None
    assert shaped.full["structuredContent"]["body"].endswith(REDACTED)


def test_r12_1_ten_thousand_item_array_is_shaped() -> None:
    rows = [{"id": f"row-{i}", "value": i} for i in range(10_000)]
    shaped = shape_result({"content": [], "structuredContent": {"rows": rows}}, secrets=[])
    assert shaped.result["structuredContent"]["rows"] == rows[:200]
    assert shaped.result["structuredContent"][TRUNCATED_KEY] is True


@pytest.mark.parametrize("levels", [50, 100_000])
def test_r12_1_deep_nesting_is_cut_without_recursion(levels: int) -> None:
    shaped = shape_result({"content": [], "structuredContent": nested(levels)}, secrets=[])
    assert shaped.truncated
    assert object_depth(shaped.result["structuredContent"]) == 8
    assert shaped.full is not None  # the redaction walk did not recurse either


def _seconds(work: Callable[[], object]) -> float:
    start = time.perf_counter()
    work()
    return time.perf_counter() - start


@pytest.mark.parametrize(
    "unit",
    ["eyJ", "eyJabcdefgh.", "a", "Bearer ", "password", "-----BEGIN PRIVATE KEY-----", "ghp_", "AKIA"],
)
def test_r12_2_redaction_time_grows_linearly_on_adversarial_text(unit: str) -> None:
    """Ten times the text may take about ten times as long, never a hundred (no quadratic scan)."""
    small = unit * (200_000 // len(unit))
    large = unit * (2_000_000 // len(unit))
    # The minimum of several runs of each size: a busy machine only ever adds time to a run.
    small_time = min(_seconds(lambda: redact_text(small, [])) for _ in range(5))
    large_time = min(_seconds(lambda: redact_text(large, [])) for _ in range(3))
    assert large_time < 40 * max(small_time, 1e-3)
