"""R-13.5: the address policy of ``toolcrib.addresses``, by property and against real sockets.

Every refusal here happens before a connection is made: the connect recorder of
``tests.netguard`` keeps the process on loopback and shows that nothing else was tried.
"""

from __future__ import annotations

import ast
import base64
import ipaddress
import json
import socket
from collections.abc import AsyncIterator, Iterable, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpcore2
import httpx2
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from tests.netguard import Recorder, loopback_only
from toolcrib.addresses import (
    METADATA_ADDRESSES,
    METADATA_NAMES,
    AddressPolicy,
    GuardedBackend,
    guarded_client,
    guarded_transport,
    refusal,
)
from toolcrib.errors import AddressRefused, ToolcribError

LINK_LOCAL_V4 = ipaddress.IPv4Network("169.254.0.0/16")
LINK_LOCAL_V6 = ipaddress.IPv6Network("fe80::/10")
PRIVATE_V4 = [
    ipaddress.IPv4Network(n) for n in ("10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "127.0.0.0/8")
]
PRIVATE_V6 = [ipaddress.IPv6Network("fc00::/7"), ipaddress.IPv6Network("::1/128")]
SETTINGS = settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@pytest.fixture
def guard() -> Iterator[Recorder]:
    with loopback_only() as recorder:
        yield recorder


async def numeric_only(host: str, port: int) -> list[str]:
    """getaddrinfo that reads numeric spellings as the system does, and never asks a DNS server
    (so it never blocks either: called on the loop)."""
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_NUMERICHOST)
    return [str(info[4][0]) for info in infos]


def run(policy: AddressPolicy, host: str) -> list[str]:
    return anyio.run(policy.addresses_for, host, 80)


def refused_everywhere(policy: AddressPolicy, forms: list[str]) -> list[str]:
    """The spellings ``policy`` lets through (one event loop for all of them)."""

    async def each() -> list[str]:
        passed = []
        for form in forms:
            try:
                await policy.addresses_for(form, 80)
            except AddressRefused:
                continue
            passed.append(form)
        return passed

    return anyio.run(each)


def v4_in(network: ipaddress.IPv4Network) -> st.SearchStrategy[ipaddress.IPv4Address]:
    return st.integers(0, network.num_addresses - 1).map(lambda i: network[i])


def spellings(ip: ipaddress.IPv4Address) -> list[str]:
    """Every way to write an IPv4 address that reaches the network as that address: plain, the
    odd IPv4 forms getaddrinfo reads, and each IPv6 embedding, compressed and exploded."""
    n = int(ip)
    a, b, c, d = ip.packed
    hi, lo = f"{n >> 16:x}", f"{n & 0xFFFF:x}"
    inverted = ~n & 0xFFFFFFFF  # Teredo carries its client's address inverted
    teredo = f"2001:0:4136:e378:8000:63bf:{inverted >> 16:x}:{inverted & 0xFFFF:x}"
    forms = [
        str(ip),
        str(n),  # decimal
        f"0x{n:x}",
        f"0x{n:X}",
        f"0{a:o}.0{b:o}.0{c:o}.0{d:o}",  # octal
        f"0x{a:x}.0x{b:x}.0x{c:x}.0x{d:x}",
        f"{a}.{b}.{(c << 8) | d}",  # short
        f"{a}.{(b << 16) | (c << 8) | d}",
    ]
    for six in (
        f"::ffff:{ip}",
        f"::ffff:{hi}:{lo}",
        f"::{ip}",
        f"::ffff:0:{ip}",
        f"64:ff9b::{ip}",
        f"64:ff9b::{hi}:{lo}",
        f"64:ff9b:1::{hi}:{lo}",
        f"2002:{hi}:{lo}::1",
        f"2002:{hi}:{lo}:ffff::",
        teredo,
    ):
        v6 = ipaddress.IPv6Address(six)
        forms += [six, six.upper(), v6.exploded, str(v6), f"[{six}]"]
    return forms


# --- the pure decision ----------------------------------------------------------------------------


@SETTINGS
@given(v4_in(LINK_LOCAL_V4), st.booleans())
def test_r13_5_every_link_local_ipv4_address_is_refused_in_every_spelling(
    ip: ipaddress.IPv4Address, deny_private: bool
) -> None:
    policy = AddressPolicy(deny_private=deny_private, resolve=numeric_only)
    for form in spellings(ip):
        literal = form.strip("[]")
        if ":" in literal:
            assert refusal(literal, deny_private=deny_private) is not None, form
    assert refused_everywhere(policy, spellings(ip)) == []


@SETTINGS
@given(st.integers(0, 2**118 - 1), st.booleans(), st.sampled_from(["", "%eth0", "%1"]))
def test_r13_5_every_fe80_address_is_refused_in_every_textual_form(
    offset: int, deny_private: bool, zone: str
) -> None:
    ip = LINK_LOCAL_V6[offset]
    policy = AddressPolicy(deny_private=deny_private, resolve=numeric_only)
    forms = [str(ip), ip.exploded, str(ip).upper(), ip.exploded.upper()]
    for form in forms:
        assert refusal(form + zone, deny_private=deny_private) == "a link-local address", form
    assert refused_everywhere(policy, [f"[{form}{zone}]" for form in forms]) == []


@SETTINGS
@given(st.one_of(*(v4_in(n) for n in PRIVATE_V4), v4_in(ipaddress.IPv4Network("100.64.0.0/10"))))
def test_r13_5_private_ipv4_addresses_are_refused_only_when_private_addresses_are_denied(
    ip: ipaddress.IPv4Address,
) -> None:
    for form in spellings(ip):
        literal = form.strip("[]")
        if ":" in literal or literal == str(ip):
            if ip in METADATA_ADDRESSES:
                continue
            assert refusal(literal, deny_private=True) is not None, form
            assert refusal(literal, deny_private=False) is None, form
    denied = AddressPolicy(deny_private=True, resolve=numeric_only)
    allowed = AddressPolicy(deny_private=False, resolve=numeric_only)
    if ip not in METADATA_ADDRESSES:
        with pytest.raises(AddressRefused):
            run(denied, str(ip))
        assert run(allowed, str(ip)) == [str(ip)]


@SETTINGS
@given(st.one_of(*(st.ip_addresses(network=n) for n in PRIVATE_V6)))
def test_r13_5_loopback_and_unique_local_ipv6_are_refused_only_when_private_addresses_are_denied(
    ip: ipaddress.IPv6Address,
) -> None:
    if ip in METADATA_ADDRESSES:
        assert refusal(ip, deny_private=False) == "a cloud metadata address"
        return
    assert refusal(ip, deny_private=True) is not None
    assert refusal(ip, deny_private=False) is None


PRIVATE_ONLY_V4 = [
    ipaddress.IPv4Network(n) for n in ("10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "100.64.0.0/10")
]


@SETTINGS
@given(
    st.one_of(*(st.ip_addresses(network=n) for n in [*PRIVATE_ONLY_V4, ipaddress.IPv6Network("fc00::/7")])),
    st.booleans(),
)
def test_r13_7_the_policy_for_anonymous_fetches_refuses_private_addresses_whatever_the_setting(
    ip: ipaddress.IPv4Address | ipaddress.IPv6Address, loopback: bool
) -> None:
    """A fetch an unauthenticated caller triggers (client ID metadata documents) never reaches a
    private address, IPv4-mapped included, even from a policy that allows them; the development
    exception lets loopback through and nothing else."""
    strict = AddressPolicy(deny_private=False, resolve=numeric_only).for_anonymous(allow_loopback=loopback)
    forms = [str(ip)] + ([f"::ffff:{ip}"] if isinstance(ip, ipaddress.IPv4Address) else [])
    assert refused_everywhere(strict, forms) == []


@pytest.mark.parametrize("loopback", ["127.0.0.1", "127.9.9.9", "::1", "::ffff:127.0.0.1"])
def test_r13_7_loopback_is_let_through_anonymous_fetches_only_by_the_development_setting(
    loopback: str,
) -> None:
    base = AddressPolicy(deny_private=False, resolve=numeric_only)
    assert refused_everywhere(base.for_anonymous(), [loopback]) == []
    assert refused_everywhere(base.for_anonymous(allow_loopback=True), [loopback]) == [loopback]
    allowed = base.for_anonymous(allow_loopback=True)
    assert (
        refused_everywhere(allowed, ["169.254.169.254", "fe80::1", "10.0.0.1", "metadata.google.internal"])
        == []
    )


def _public_v4(ip: ipaddress.IPv4Address) -> bool:
    return (
        ip.is_global
        and not ip.is_multicast
        and ip not in METADATA_ADDRESSES
        and ip not in ipaddress.IPv4Network("192.0.0.0/24")
    )


@SETTINGS
@given(st.ip_addresses(v=4).filter(_public_v4), st.booleans())
@example(ipaddress.IPv4Address("8.8.8.8"), True)
def test_r13_5_public_ipv4_addresses_are_allowed_in_every_spelling(
    ip: ipaddress.IPv4Address, deny_private: bool
) -> None:
    for form in spellings(ip):
        literal = form.strip("[]")
        if ":" in literal:
            assert refusal(literal, deny_private=deny_private) is None, form
    assert run(AddressPolicy(deny_private=deny_private, resolve=numeric_only), str(int(ip))) == [str(ip)]


@SETTINGS
@given(st.ip_addresses(network="2000::/3"), st.booleans())
def test_r13_5_public_ipv6_addresses_are_allowed(ip: ipaddress.IPv6Address, deny_private: bool) -> None:
    if ip in ipaddress.IPv6Network("2002::/16") or ip in ipaddress.IPv6Network("2001::/32"):
        return  # these carry an IPv4 address: judged by it (above)
    assert refusal(ip, deny_private=deny_private) is None


def test_r13_5_known_metadata_addresses_and_special_ranges_are_refused_whatever_the_setting() -> None:
    always = [
        *map(str, METADATA_ADDRESSES),
        "0.0.0.0",
        "::",
        "255.255.255.255",
        "224.0.0.1",
        "ff02::1",
        "240.0.0.1",
        "4000::1",
        "::ffff:100.100.100.200",
    ]
    for ip in always:
        assert refusal(ip, deny_private=False) is not None, ip
        assert refusal(ip, deny_private=True) is not None, ip
    assert refusal("not an address", deny_private=False) == "not an IP address"


# --- names, resolution and URLs -------------------------------------------------------------------


class Answers:
    """A resolver answering from a table (no DNS server here), recording what it was asked."""

    def __init__(self, table: dict[str, list[str]]) -> None:
        self.table = table
        self.asked: list[str] = []

    async def __call__(self, host: str, port: int) -> list[str]:
        self.asked.append(host)
        if host not in self.table:
            raise socket.gaierror(socket.EAI_NONAME, "unknown")
        return self.table[host]


@pytest.mark.parametrize("name", sorted(METADATA_NAMES))
def test_r13_5_metadata_host_names_are_refused_by_name_before_any_resolution(name: str) -> None:
    resolver = Answers({})
    policy = AddressPolicy(resolve=resolver)
    for spelled in (name, name.upper(), name + ".", name.title() + "."):
        with pytest.raises(AddressRefused) as refused:
            anyio.run(policy.check_url, f"http://{spelled}/computeMetadata/v1/")
        assert refused.value.code == "upstream_error"
        assert refused.value.host == spelled.lower()
    assert resolver.asked == []


def test_r13_5_a_dns_name_resolving_to_a_metadata_address_is_refused() -> None:
    resolver = Answers(
        {"evil.example": ["169.254.169.254"], "mixed.example": ["93.184.216.34", "::ffff:169.254.169.254"]}
    )
    policy = AddressPolicy(resolve=resolver)
    for url in ("https://evil.example/mcp", "http://mixed.example:8080/mcp"):
        with pytest.raises(AddressRefused) as refused:
            anyio.run(policy.check_url, url)
        assert "example" in refused.value.message
        assert "169.254" not in refused.value.message  # the host and why, never what it resolved to
    assert resolver.asked == ["evil.example", "mixed.example"]


def test_r13_5_a_name_that_does_not_resolve_now_is_left_to_the_check_at_connect_time() -> None:
    anyio.run(AddressPolicy(resolve=Answers({})).check_url, "https://nowhere.example/mcp")


def test_r13_5_localhost_resolved_for_real_is_refused_only_under_deny_private(guard: Recorder) -> None:
    with pytest.raises(AddressRefused):
        anyio.run(AddressPolicy(deny_private=True).check_url, "http://localhost:9/mcp")
    anyio.run(AddressPolicy(deny_private=False).check_url, "http://localhost:9/mcp")
    assert guard.lookups == []
    assert guard.connects == []


@SETTINGS
@given(
    st.one_of(
        st.text(max_size=80),
        st.builds(lambda host, rest: f"http://{host}/{rest}", st.text(max_size=40), st.text(max_size=10)),
        st.builds(
            lambda host: f"https://[{host}]:443/", st.text(alphabet="0123456789abcdefABCDEF:.%", max_size=45)
        ),
    ),
    st.lists(st.one_of(st.ip_addresses().map(str), st.text(max_size=20)), max_size=3),
)
def test_r13_5_the_url_check_answers_allowed_refused_or_a_clear_error_for_any_text(
    url: str, answers: list[str]
) -> None:
    async def resolver(host: str, port: int) -> list[str]:
        if not answers:
            raise socket.gaierror(socket.EAI_NONAME, "unknown")
        return answers

    outcome: ToolcribError | None = None
    try:
        anyio.run(AddressPolicy(resolve=resolver).check_url, url)
    except ToolcribError as exc:  # anything else fails the test
        outcome = exc
    if outcome is not None:
        assert outcome.code in ("upstream_error", "invalid_request")
        assert len(outcome.message) < 400


@pytest.mark.parametrize("module", ["addresses", "guarded_http"])
def test_r13_5_the_address_module_is_a_leaf_every_layer_may_import(module: str) -> None:
    """``addresses`` and its guarded transport (``guarded_http``, apart so that the policy loads
    without httpx2, #33) import nothing of toolcrib but the errors and each other's one way."""
    path = Path(__file__).resolve().parents[1] / "src" / "toolcrib" / f"{module}.py"
    imported: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            imported.add(node.module)
        elif isinstance(node, ast.Import):
            imported.update(alias.name for alias in node.names)
    ours = {m for m in imported if m.startswith("toolcrib")}
    assert (
        ours
        == {"addresses": {"toolcrib.errors", "toolcrib.guarded_http"}, "guarded_http": {"toolcrib.errors"}}[
            module
        ]
    )
    assert {m.split(".")[0] for m in imported} - {"toolcrib", "__future__"} <= {
        "anyio",
        "httpcore2",
        "httpx2",
        "importlib",
        "ipaddress",
        "socket",
        "ssl",
        "unicodedata",
        "collections",
        "dataclasses",
        "typing",
        "urllib",
    }


# --- the backend: one resolution per connection, a checked address connected --------------------------


class ConnectRecorder(httpcore2.AsyncNetworkBackend):
    """An inner backend recording what it is asked to connect to, answering from canned bytes."""

    def __init__(self, answer: bytes) -> None:
        self.answer = answer
        self.connects: list[tuple[str, int]] = []

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,  # noqa: ASYNC109 - httpcore2's interface
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore2.AsyncNetworkStream:
        self.connects.append((host, port))
        return httpcore2.AsyncMockStream([self.answer])


OK = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok"


class Rebinding:
    """Answers a public address first, then the metadata address: a rebinding DNS server."""

    def __init__(self) -> None:
        self.asked = 0

    async def __call__(self, host: str, port: int) -> list[str]:
        self.asked += 1
        return ["93.184.216.34"] if self.asked == 1 else ["169.254.169.254"]


@pytest.mark.anyio
async def test_r13_5_a_rebinding_name_cannot_make_the_backend_connect_to_the_metadata_address() -> None:
    resolver = Rebinding()
    policy = AddressPolicy(resolve=resolver)
    inner = ConnectRecorder(OK)
    backend = GuardedBackend(policy, inner)
    transport = guarded_transport(policy, backend=backend)
    async with httpx2.AsyncClient(transport=transport) as http:
        first = await http.get("http://rebind.example/latest")
        assert first.status_code == 200
        with pytest.raises(AddressRefused) as refused:
            await http.get("http://rebind.example/latest")  # a new connection: resolved, checked again
        assert isinstance(refused.value, httpx2.ConnectError)  # httpx2 code sees a failed connect
        with pytest.raises(AddressRefused):
            await backend.connect_tcp("rebind.example", 80)
    assert resolver.asked == 3
    assert inner.connects == [("93.184.216.34", 80)]  # the checked address, never the name again


@pytest.mark.anyio
async def test_r13_5_tls_keeps_the_host_name_while_the_connect_goes_to_the_checked_address() -> None:
    seen: dict[str, Any] = {}

    class Stream(httpcore2.AsyncMockStream):
        async def start_tls(
            self,
            ssl_context: Any,
            server_hostname: str | None = None,
            timeout: Any = None,  # noqa: ASYNC109 - httpcore2's interface
        ) -> Any:
            seen["sni"] = server_hostname
            raise httpcore2.ConnectError("no TLS in this test")

    class Inner(ConnectRecorder):
        async def connect_tcp(self, host: str, port: int, *args: Any, **kwargs: Any) -> Any:
            self.connects.append((host, port))
            return Stream([])

    inner = Inner(b"")
    policy = AddressPolicy(resolve=Answers({"api.example": ["93.184.216.34"]}))
    async with httpx2.AsyncClient(
        transport=guarded_transport(policy, backend=GuardedBackend(policy, inner))
    ) as http:
        with pytest.raises(httpx2.ConnectError):
            await http.get("https://api.example/mcp")
    assert inner.connects == [("93.184.216.34", 443)]
    assert seen["sni"] == "api.example"


# --- redirects, against a real loopback server ------------------------------------------------------


@asynccontextmanager
async def redirecting_server(location: str) -> AsyncIterator[str]:
    """A loopback HTTP server answering every request with a 307 to ``location``."""
    listener = await anyio.create_tcp_listener(local_host="127.0.0.1")
    port = listener.extra(anyio.abc.SocketAttribute.local_port)

    async def answer(client: anyio.abc.SocketStream) -> None:
        async with client:
            received = b""
            while b"\r\n\r\n" not in received:
                received += await client.receive()
            head = f"HTTP/1.1 307 Temporary Redirect\r\nLocation: {location}\r\nContent-Length: 0\r\n"
            await client.send((head + "Connection: close\r\n\r\n").encode())

    async with listener, anyio.create_task_group() as tg:
        tg.start_soon(listener.serve, answer)
        try:
            yield f"http://127.0.0.1:{port}"
        finally:
            tg.cancel_scope.cancel()


@pytest.mark.parametrize(
    "location",
    [
        "http://169.254.169.254/latest/meta-data/iam/security-credentials/",
        "http://[::ffff:a9fe:a9fe]/latest/meta-data/",
        "http://2852039166/latest/meta-data/",
        "http://metadata.google.internal/computeMetadata/v1/",
        "http://[fe80::1]/",
    ],
)
@pytest.mark.anyio
async def test_r13_5_a_redirect_to_a_metadata_address_is_refused_before_any_connection(
    location: str, guard: Recorder
) -> None:
    async with redirecting_server(location) as server:
        async with guarded_client(AddressPolicy(), follow_redirects=True, timeout=10) as http:
            with pytest.raises(AddressRefused) as refused:
                await http.get(server + "/client-metadata.json")
        assert refused.value.code == "upstream_error"
    assert guard.connects == ["127.0.0.1"]  # the loopback server, and nothing after its redirect
    assert guard.lookups == []


@pytest.mark.anyio
async def test_r13_5_a_redirect_is_refused_when_private_addresses_are_denied(guard: Recorder) -> None:
    async with redirecting_server("http://10.0.0.1/") as server:
        async with guarded_client(AddressPolicy(deny_private=False), timeout=10) as http:
            first = await http.get(server + "/")  # not followed: the loopback server answers
            assert first.status_code == 307
        async with guarded_client(AddressPolicy(deny_private=True), follow_redirects=True) as http:
            with pytest.raises(AddressRefused):
                await http.get(server + "/")  # loopback itself is private: refused first
    assert guard.connects == ["127.0.0.1"]


# --- the JWKS of the configured issuer --------------------------------------------------------------


@pytest.mark.anyio
@pytest.mark.parametrize(
    "jwks_url",
    [
        "http://169.254.169.254/.well-known/jwks.json",
        "http://[::ffff:a9fe:a9fe]/jwks",
        "http://metadata.goog/jwks",
    ],
)
async def test_r13_5_the_jwks_of_an_issuer_at_a_metadata_address_is_never_fetched(
    jwks_url: str, guard: Recorder
) -> None:
    from toolcrib.auth.jwt import InvalidToken, JWTSettings, JWTVerifier

    def part(value: dict[str, str]) -> str:
        return base64.urlsafe_b64encode(json.dumps(value).encode()).rstrip(b"=").decode()

    token = f"{part({'alg': 'RS256', 'kid': 'k1'})}.{part({'sub': 'x'})}.c2ln"  # its keys are never fetched
    issuer = JWTSettings(issuer="https://idp.example", audience="https://gw.example/mcp", jwks_url=jwks_url)
    async with JWTVerifier(issuer) as verifier:
        with pytest.raises(InvalidToken) as refused:
            await verifier.verify(token)
    assert refused.value.reason == "jwks_unavailable"
    assert guard.connects == []
    assert guard.lookups == []
