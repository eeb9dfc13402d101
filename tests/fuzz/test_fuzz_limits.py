"""Fuzz ``limits__set`` over MCP and REST (R-7.10, R-3.3, #21): hostile counts (negative, zero,
huge, fractional, of the wrong type), a member and a role both, a tool without its account, odd
names: each answers in-band (``invalid_arguments`` for what is malformed), never a 500, never a
word of Python or SQL, and never leaves a rule behind that it refused."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx2
import pytest
from anyio.from_thread import BlockingPortal, start_blocking_portal
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import start_fixture_http
from tests.e2e.inprocess import open_gateway, owner_token, settings_for
from tests.fuzz.strategies import BIG_NUMBERS, ODD_TEXT
from tests.principals import OPERATOR
from tests.web.asgi import MCP_HEADERS, asgi_client, bearer
from toolcrib.gateway.connections.manage import add_connection
from toolcrib.gateway.core import Gateway
from toolcrib.gateway.governance import rate_limits
from toolcrib.gateway.governance.buckets import buckets_for
from toolcrib.gateway.identity import members
from toolcrib.policy.rate_limits import MAX_PER_PERIOD

pytestmark = pytest.mark.e2e

LEAKS = ("Traceback", 'File "', "sqlalchemy", "sqlite3", "psycopg", "Error:", "Exception", "<class")
ABSENT = object()


@dataclass
class Fuzz:
    portal: BlockingPortal
    gw: Gateway
    http: httpx2.AsyncClient
    owner: str


@pytest.fixture(scope="module")
def fuzz(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Fuzz]:
    upstream = start_fixture_http()
    tmp: Path = tmp_path_factory.mktemp("fuzz-limits")
    try:
        with (
            start_blocking_portal("asyncio") as portal,
            portal.wrap_async_context_manager(open_gateway(settings_for(tmp, semantic=False))) as gw,
            portal.wrap_async_context_manager(asgi_client(gw)) as http,
        ):
            owner = portal.call(owner_token, gw)
            portal.call(members.add_member, gw.store, "mia", "member", OPERATOR)
            portal.call(
                lambda: add_connection(gw, "desk", connector="Helpdesk", url=upstream.url, actor=OPERATOR)
            )
            yield Fuzz(portal, gw, http, owner)
    finally:
        upstream.stop()


names = st.one_of(st.text(max_size=12), st.sampled_from(ODD_TEXT))
counts = st.one_of(
    st.integers(-(10**12), 10**12),
    st.integers(-3, 3),
    st.sampled_from([*BIG_NUMBERS, MAX_PER_PERIOD, MAX_PER_PERIOD + 1, 2**31, 1.0, 2.5, float("1e20")]),
    st.booleans(),
    st.none(),
    names,
    st.lists(st.integers(), max_size=2),
    st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
)
arguments = st.fixed_dictionaries(
    {},
    optional={
        "member": st.one_of(st.sampled_from(["mia", "nobody"]), names, st.integers()),
        "role": st.one_of(st.sampled_from(["member", "admin", "king"]), names, st.booleans()),
        "account": st.one_of(st.sampled_from(["desk", "nowhere"]), names),
        "tool": st.one_of(st.sampled_from(["echo_message", "nothing"]), names),
        "per_minute": counts,
        "per_day": counts,
    },
)

sane = st.fixed_dictionaries(
    {"per_minute": st.integers(1, MAX_PER_PERIOD)},
    optional={
        "role": st.sampled_from(["member", "admin"]),
        "account": st.just("desk"),
        "per_day": st.integers(1, 9),
    },
)


def _malformed(args: dict[str, Any]) -> bool:
    """What the brief calls hostile: bad counts or types, member and role both, tool alone."""
    given_counts = [args[k] for k in ("per_minute", "per_day") if args.get(k) is not None]
    if not given_counts or (args.get("member") is not None and args.get("role") is not None):
        return True
    if args.get("tool") is not None and args.get("account") is None:
        return True
    for value in given_counts:
        whole = isinstance(value, float) and value.is_integer()
        if isinstance(value, bool) or not (isinstance(value, int) or whole):
            return True
        if not 1 <= value <= MAX_PER_PERIOD:
            return True
    return any(
        args.get(k) is not None and not isinstance(args[k], str)
        for k in ("member", "role", "account", "tool")
    )


async def _send(fuzz: Fuzz, args: dict[str, Any], over_rest: bool) -> tuple[int, str, str]:
    """(HTTP status, the answer's code or ``ok``, its text)."""
    if over_rest:
        headers = {**bearer(fuzz.owner), "Content-Type": "application/json"}
        response = await fuzz.http.post("/api/limits/set", content=json.dumps(args).encode(), headers=headers)
        code = response.json()["error"]["code"] if response.status_code >= 400 else "ok"
        return response.status_code, code, response.text
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call"}
    body["params"] = {"name": "toolcrib__limits__set", "arguments": args}
    headers = {**MCP_HEADERS, **bearer(fuzz.owner), "Content-Type": "application/json"}
    response = await fuzz.http.post("/mcp", content=json.dumps(body).encode(), headers=headers)
    answer = response.json()
    if "error" in answer:  # a protocol error: only for text JSON cannot carry as UTF-8
        assert _surrogate(args), answer
        assert answer["error"]["code"] not in (0, -32603), answer
        return response.status_code, "jsonrpc_error", response.text
    result = answer["result"]
    code = result["structuredContent"]["error"]["code"] if result.get("isError") else "ok"
    return response.status_code, code, response.text


def _surrogate(args: dict[str, Any]) -> bool:
    """Whether a value holds a lone surrogate (valid JSON text, no UTF-8 string)."""
    return any(isinstance(v, str) and any(0xD800 <= ord(c) <= 0xDFFF for c in v) for v in args.values())


async def _reset(fuzz: Fuzz) -> int:
    """Remove every limit (as the host operator) and forget the buckets; how many there were."""
    operator = await members.operator_principal(fuzz.gw.store)
    rules = await rate_limits.list_limits(fuzz.gw.policy, operator)
    for rule in rules:
        await rate_limits.remove_limit(fuzz.gw, operator, rule.id)
    fuzz.gw.buckets = buckets_for(fuzz.gw.store.db)
    return len(rules)


def test_r7_10_hostile_limits_answer_invalid_arguments_in_band_never_a_500(fuzz: Fuzz) -> None:
    seen: dict[str, int] = {}

    @settings(max_examples=400, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
    @given(st.one_of(arguments, arguments, arguments, sane), st.booleans())
    def run(args: dict[str, Any], over_rest: bool) -> None:
        status, code, text = fuzz.portal.call(_send, fuzz, args, over_rest)
        left = fuzz.portal.call(_reset, fuzz)
        seen[code] = seen.get(code, 0) + 1
        assert status != 500, text
        assert not [w for w in LEAKS if w in text], text[:2000]
        if code == "jsonrpc_error":
            assert left == 0
        elif _malformed(args):
            assert code == "invalid_arguments", (args, text[:500])
            assert left == 0
        else:
            assert code in ("ok", "invalid_arguments", "not_found"), (args, text[:500])
            assert left == (code == "ok")

    run()
    assert seen.get("ok", 0) > 10
    assert seen.get("invalid_arguments", 0) > 100
