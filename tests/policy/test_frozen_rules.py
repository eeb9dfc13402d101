"""R-9.2: which frozen values are secret by default, what a read shows of them, what is redacted,
and R-11.2's target id that never takes a secret. Pure functions, no I/O."""

from __future__ import annotations

from typing import Any

import mcp_types as types
import pytest

from tests.catalog.conftest import record_of
from toolcrib.errors import InvalidArguments
from toolcrib.gateway.audit.entries import target_id
from toolcrib.gateway.calls.call_secrets import CallSecrets, redacting_relay
from toolcrib.policy.frozen import frozen_view, is_secret, load_frozen, says_credential, secret_strings
from toolcrib.upstream.relay import CallRelay

pytestmark = pytest.mark.anyio

SECRET = "QUOKKA-7f3a9c2e1b5d"


@pytest.mark.parametrize(
    "name",
    [
        "key",
        "api_key",
        "apiKey",
        "apikey",
        "x-api-key",
        "X-API-Key",
        "access_token",
        "refreshToken",
        "client_secret",
        "password",
        "passwd",
        "db_pwd",
        "passphrase",
        "Authorization",
        "auth",
        "credentials",
        "private_key",
        "cookie",
        "session_id",
        "signature",
        "sort_key",
    ],
)
def test_r9_2_a_credential_named_parameter_is_secret_by_default(name: str) -> None:
    assert says_credential(name)
    assert is_secret(name, None)
    assert not is_secret(name, False)  # --no-secret keeps, say, a sort_key readable


@pytest.mark.parametrize("name", ["name", "title", "priority", "team_id", "keyword", "monkey", "tokens_used"])
def test_r9_2_other_parameters_are_not_secret_unless_asked(name: str) -> None:
    assert not says_credential(name)
    assert not is_secret(name, None)
    assert is_secret(name, True)


def test_r9_2_a_secret_read_says_secret_and_set_and_never_holds_the_value() -> None:
    row = {
        "account": "desk",
        "tool": "t",
        "param": "api_key",
        "value": None,
        "secret": True,
        "sealed": "gAAA",
    }
    view = frozen_view(row)
    assert view == {"account": "desk", "tool": "t", "param": "api_key", "secret": True, "set": True}
    plain = {"account": "desk", "tool": "t", "param": "team", "value": "eng", "secret": False, "sealed": None}
    assert frozen_view(plain)["value"] == "eng"


def test_r9_2_secret_values_are_unsealed_once_at_load_and_grouped_by_account() -> None:
    opened: list[str] = []

    def unseal(token: str) -> Any:
        opened.append(token)
        return {"sealed-1": SECRET, "sealed-2": {"user": "svc-robot", "pin": 482913}}[token]

    rows = [
        {
            "account": "desk",
            "tool": "fetch",
            "param": "api_key",
            "value": None,
            "secret": True,
            "sealed": "sealed-1",
        },
        {
            "account": "desk",
            "tool": "fetch",
            "param": "team",
            "value": "eng",
            "secret": False,
            "sealed": None,
        },
        {
            "account": "desk",
            "tool": "login",
            "param": "auth",
            "value": None,
            "secret": True,
            "sealed": "sealed-2",
        },
        {
            "account": "crm",
            "tool": "fetch",
            "param": "region",
            "value": "eu",
            "secret": False,
            "sealed": None,
        },
    ]
    loaded = load_frozen(rows, unseal)
    assert opened == ["sealed-1", "sealed-2"]
    assert loaded.values[("desk", "fetch")] == {"api_key": SECRET, "team": "eng"}
    assert loaded.secret_params == {("desk", "fetch"): {"api_key"}, ("desk", "login"): {"auth"}}
    assert set(loaded.secrets["desk"]) >= {SECRET, "svc-robot", "482913"}
    assert "crm" not in loaded.secrets


def test_r9_2_a_structured_secret_is_redacted_by_its_json_and_every_leaf() -> None:
    assert secret_strings(SECRET) == [SECRET]
    found = secret_strings({"user": "svc-robot", "ids": [482913, True]})
    assert {'{"user":"svc-robot","ids":[482913,true]}', "svc-robot", "482913"} <= set(found)


def test_r11_2_a_secret_key_is_never_the_target_id() -> None:
    arguments = {"key": SECRET, "name": "acme"}
    assert target_id(arguments) == SECRET  # the rule's preference, without secrets
    assert target_id(arguments, secret={"key"}) == "acme"
    assert target_id({"key": SECRET}, secret={"key"}) is None


def test_r11_2_no_argument_holding_a_secret_value_is_the_target_id() -> None:
    arguments = {"id": SECRET, "path": f"/clients/{SECRET}/data", "name": "acme"}
    assert target_id(arguments, secrets=[SECRET]) == "acme"
    assert target_id({"id": "42"}, secrets=[SECRET]) == "42"


def test_r9_2_an_invalid_arguments_answer_does_not_quote_a_secret_value() -> None:
    record = record_of({"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}}})
    hidden = CallSecrets(frozenset({"a"}), (SECRET,))
    exc = InvalidArguments(
        "2 argument error(s)",
        [
            {"pointer": "/a", "message": f"'{SECRET}' is not of type 'number'"},
            {"pointer": "/b", "message": f"'x' is not one of ['{SECRET}']"},
        ],
    )
    answer = hidden.invalid(exc, record)
    assert answer.code == "invalid_arguments"
    assert [e["pointer"] for e in answer.errors] == ["/a", "/b"]
    assert SECRET not in repr(answer.to_payload())
    assert hidden.shown({"a": SECRET, "b": 2}) == {"a": "[REDACTED]", "b": 2}


async def test_r13_3_progress_log_lines_and_questions_of_a_call_are_redacted() -> None:
    seen: list[Any] = []

    async def progress(value: float, total: float | None, message: str | None) -> None:
        seen.append(message)

    async def log(params: types.LoggingMessageNotificationParams) -> None:
        seen.append(params.data)

    async def elicit(params: types.ElicitRequestParams) -> types.ElicitResult:
        seen.append(params.message)
        return types.ElicitResult(action="decline")

    relay = redacting_relay(CallRelay(progress=progress, log=log, log_level="info", elicit=elicit), [SECRET])
    assert relay is not None
    assert relay.progress is not None
    assert relay.log is not None
    assert relay.elicit is not None
    await relay.progress(1, 2, f"fetching for {SECRET}")
    await relay.log(types.LoggingMessageNotificationParams(level="info", data={"client": f"c {SECRET}"}))
    await relay.elicit(
        types.ElicitRequestFormParams(
            message=f"Use {SECRET}?", requested_schema={"type": "object", "properties": {}}
        )
    )
    assert SECRET not in repr(seen)
    assert seen == ["fetching for [REDACTED]", {"client": "c [REDACTED]"}, "Use [REDACTED]?"]
    assert redacting_relay(None, [SECRET]) is None
