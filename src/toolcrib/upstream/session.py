"""One long-lived MCP client session per connection, supervised (R-13.2).

The session is held open by a task of its own (an async context manager must be entered and left
in the same task); calls from any request task go through it. A crashed stdio server is noticed by
the call that meets the crash, which answers ``upstream_error``; the next call starts the server
again after a back-off that doubles on each consecutive failure.
"""

from __future__ import annotations

import logging
import math
import os
import tempfile
import time
import warnings
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Iterator
from contextlib import AsyncExitStack, asynccontextmanager, contextmanager
from typing import IO, Any, TypeVar

import anyio
import httpx2
import mcp_types as types
from anyio.abc import TaskGroup
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPDeprecationWarning, MCPError
from mcp_types.jsonrpc import CONNECTION_CLOSED
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from toolcrib import tracing
from toolcrib.addresses import AddressPolicy
from toolcrib.errors import (
    AddressRefused,
    ElicitationUnavailable,
    InBandError,
    InvalidArguments,
    NeedsReauth,
    TooLarge,
    UpstreamAuthFailed,
    UpstreamError,
    UpstreamStopped,
    UpstreamTimeout,
)
from toolcrib.upstream.failures import TIMEOUT, http_cause
from toolcrib.upstream.framing import is_too_large
from toolcrib.upstream.http_bound import bound_json_responses, is_bounded_refusal
from toolcrib.upstream.http_client import UpstreamHttpClient
from toolcrib.upstream.oauth import session_auth
from toolcrib.upstream.relay import OUTSIDE_CALL, CallRelay, current_call
from toolcrib.upstream.spec import UpstreamSpec
from toolcrib.upstream.stdio import stdio_transport

__all__ = ["MAX_SUBSCRIPTIONS", "OfferingsChanged", "UpstreamSession"]

T = TypeVar("T")
OfferingsChanged = Callable[[str, str, str], Coroutine[Any, Any, None]]
"""Told ``(connection, kind, uri)`` when an upstream says its ``prompts`` or ``resources`` list
changed (``uri`` empty), or that the resource at ``uri`` was ``updated``."""

logger = logging.getLogger(__name__)

_MAX_BACKOFF = 30.0
_MAX_PAGES = 100
_STDERR_TAIL = 8192  # bytes of a stdio server's stderr read for its last line
_DEFAULT_MAX_MESSAGE = 64 * 1024 * 1024
MAX_SUBSCRIPTIONS = 256
"""Resource subscriptions one session holds at its upstream at most (each a stream at 2026-07-28)."""


def _too_large(exc: MCPError) -> bool:
    """An answer refused for its size: a stdio line (``framing``), an HTTP JSON body
    (``http_bound``), or a server-sent event over the SDK's ``max_sse_event_size`` (httpx2's text)."""
    return (
        is_too_large(exc.code, exc.data)
        or is_bounded_refusal(exc.code, exc.message)
        or (exc.code == CONNECTION_CLOSED and "byte limit" in exc.message)
    )


def _our_answer(group: ExceptionGroup[Exception]) -> InBandError | None:
    """Our own in-band answer raised inside the SDK's task groups, when that is all the group holds."""
    leaves: list[BaseException] = []
    pending: list[BaseException] = [group]
    while pending:
        exc = pending.pop()
        if isinstance(exc, BaseExceptionGroup):
            pending.extend(exc.exceptions)
        else:
            leaves.append(exc)
    return leaves[0] if len(leaves) == 1 and isinstance(leaves[0], InBandError) else None


class UpstreamSession:
    """A supervised client session to one upstream."""

    def __init__(
        self,
        spec: UpstreamSpec,
        task_group: TaskGroup,
        *,
        call_timeout: float,
        connect_timeout: float,
        backoff: float,
        max_message_bytes: int = _DEFAULT_MAX_MESSAGE,
        on_tools_changed: Callable[[str], Coroutine[Any, Any, None]] | None = None,
        on_auth_needed: Callable[[UpstreamSpec], Coroutine[Any, Any, str | None]] | None = None,
        addresses: AddressPolicy | None = None,
        on_offerings_changed: OfferingsChanged | None = None,
    ) -> None:
        self.spec = spec
        self._on_offerings_changed = on_offerings_changed
        self.listings: dict[str, tuple[float, Any]] = {}
        """What this session's server offers besides tools (``prompts``, ``resources``, ...), as
        last listed with when (``time.monotonic``): kept by ``gateway.resources``, emptied when the
        session starts again or the server says its list changed."""
        self._addresses = addresses or AddressPolicy()  # checked on every connection
        self._on_auth_needed = on_auth_needed
        self._auth_needed = False  # the OAuth grant is gone: a person must authorize again
        self._max_message = max_message_bytes
        self._tg = task_group
        self._call_timeout = call_timeout
        self._connect_timeout = connect_timeout
        self._backoff_base = backoff
        self._on_tools_changed = on_tools_changed
        self._client: Client | None = None
        self._stop: anyio.Event | None = None
        self._closed: anyio.Event | None = None
        self._lock = anyio.Lock()
        self._failures = 0
        self._next_start = 0.0
        self.last_used = time.monotonic()
        self._requests = 0  # in flight now: a session answering one is never idle
        self._stderr: IO[bytes] | None = None
        self._refused_status: int | None = None  # 401/403 from an HTTP upstream: its credentials failed
        self._error_status: int | None = None  # the last error status a POST was answered with
        self._refused_address: AddressRefused | None = None  # a host the gateway will not call
        self._in_flight: list[CallRelay | None] = []  # the calls running now, for what names no call
        self._watching: dict[str, anyio.CancelScope] = {}  # resource URI -> its listen stream (2026-07-28)

    @property
    def running(self) -> bool:
        return self._client is not None

    def idle_for(self, now: float) -> float:
        """Seconds (of ``time.monotonic``) since the session last answered; 0 while it answers one."""
        return 0.0 if self._requests else now - self.last_used

    @contextmanager
    def _in_use(self) -> Iterator[None]:
        self._requests += 1
        try:
            yield
        finally:
            self._requests -= 1
            self.last_used = time.monotonic()

    async def list_tools(self) -> list[dict[str, Any]]:
        """Every tool of the upstream, paging through ``tools/list``, as plain JSON objects.

        ``tools/list`` only reads, so a session that dies under it (a server that crashed once) is
        started again, after the back-off, and asked once more; a call (``tools/call``) never is.
        """
        try:
            return await self._list_tools_once()
        except UpstreamStopped:
            return await self._list_tools_once()

    async def _list_tools_once(self) -> list[dict[str, Any]]:
        client = await self._ensure()
        tools: list[dict[str, Any]] = []
        cursor: str | None = None
        with self._in_use():
            async with self._translated("tools/list", self._connect_timeout):
                for _ in range(_MAX_PAGES):
                    page = await client.list_tools(cursor=cursor, cache_mode="refresh")
                    tools.extend(
                        t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in page.tools
                    )
                    cursor = page.next_cursor
                    if not cursor:
                        break
        self._failures = 0
        return tools

    async def call_tool(
        self, name: str, arguments: dict[str, Any], relay: CallRelay | None = None
    ) -> dict[str, Any]:
        """``tools/call`` with the call timeout; the result as the JSON of a CallToolResult.

        ``relay`` receives the upstream's progress, log lines and questions for this call (see
        :mod:`toolcrib.upstream.relay`). A caller cancelled mid-call cancels the upstream request:
        the SDK sends the upstream ``notifications/cancelled``.

        With traces on (R-14.2), the SDK's own client span wraps the request and puts its W3C trace
        context in the request's ``_meta`` (``traceparent``), over stdio and HTTP alike; over HTTP
        the POST carries it as a header too (``tracing.inject_headers``).
        """
        client = await self._ensure()
        progress = relay.progress if relay is not None else None
        meta = relay.meta() if relay is not None else None
        token = current_call.set(relay)
        self._in_flight.append(relay)
        try:
            with self._in_use():
                async with self._translated(name, self._call_timeout):
                    result = await client.call_tool(name, arguments, progress_callback=progress, meta=meta)  # type: ignore[arg-type]
        finally:
            self._in_flight.remove(relay)
            current_call.reset(token)
        self._failures = 0
        return result.model_dump(mode="json", by_alias=True, exclude_none=True)

    async def ask(self, what: str, send: Callable[[Client], Awaitable[T]]) -> T:
        """One request other than ``tools/call`` (``prompts/get``, ``resources/read``, a listing)
        within the call timeout, its failures translated like a call's."""
        client = await self._ensure()
        with self._in_use():
            async with self._translated(what, self._call_timeout):
                answer = await send(client)
        self._failures = 0
        return answer

    async def capabilities(self) -> types.ServerCapabilities:
        """What the server said it offers when the session started (started now if need be)."""
        return (await self._ensure()).server_capabilities

    async def subscribe(self, uri: str) -> bool:
        """Be told when the resource at ``uri`` changes (``updated``), where the server offers it:
        ``resources/subscribe`` before 2026-07-28, a ``subscriptions/listen`` stream naming it on
        2026-07-28. False when the server offers no subscriptions. A session started again has
        none: who subscribed subscribes again."""
        client = await self._ensure()
        resources = client.server_capabilities.resources
        if resources is None or not resources.subscribe:
            return False
        if uri not in self._watching and len(self._watching) >= MAX_SUBSCRIPTIONS:
            raise InvalidArguments(
                f"{self.spec.name}: the gateway holds at most {MAX_SUBSCRIPTIONS} resource subscriptions "
                "per connection"
            )
        if client.protocol_version in MODERN_PROTOCOL_VERSIONS:
            if uri not in self._watching:
                scope = self._watching[uri] = anyio.CancelScope()
                self._tg.start_soon(self._watch, client, uri, scope)
            return True
        with warnings.catch_warnings():  # removed at 2026-07-28, the era this session speaks
            warnings.simplefilter("ignore", MCPDeprecationWarning)
            await self.ask("resources/subscribe", lambda c: c.subscribe_resource(uri))
        self._watching[uri] = anyio.CancelScope()  # counted like a stream, cancelled by nothing
        return True

    async def unsubscribe(self, uri: str) -> None:
        """No longer be told about ``uri``."""
        scope = self._watching.pop(uri, None)
        client = self._client
        if scope is not None:
            scope.cancel()
        if scope is None or client is None or client.protocol_version in MODERN_PROTOCOL_VERSIONS:
            return
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", MCPDeprecationWarning)
            await self.ask("resources/unsubscribe", lambda c: c.unsubscribe_resource(uri))

    async def _watch(self, client: Client, uri: str, scope: anyio.CancelScope) -> None:
        with scope:
            try:
                async with client.listen(resource_subscriptions=[uri]) as subscription:
                    async for _event in subscription:
                        self._updated(uri)
            except Exception as exc:  # a lost stream only stops this subscription
                logger.info(
                    "upstream %s: a resource subscription ended: %s", self.spec.name, type(exc).__name__
                )
        if self._watching.get(uri) is scope:
            self._watching.pop(uri, None)

    def _updated(self, uri: str) -> None:
        if self._on_offerings_changed is not None:
            self._tg.start_soon(self._on_offerings_changed, self.spec.name, "updated", uri)

    def _sole_call(self) -> CallRelay | None:
        """The relay of the one call in flight, when exactly one is (what names no call goes there)."""
        return self._in_flight[0] if len(self._in_flight) == 1 else None

    async def _on_log(self, params: types.LoggingMessageNotificationParams) -> None:
        relay = self._sole_call()
        if relay is not None and relay.log is not None and relay.wants(params.level):
            await relay.log(params)

    async def _on_elicit(
        self, context: Any, params: types.ElicitRequestParams
    ) -> types.ElicitResult | types.ErrorData:
        """An upstream's question to the user, passed to the caller when this session can carry it."""
        found = current_call.get(OUTSIDE_CALL)
        if found is OUTSIDE_CALL:  # an elicitation/create request (before 2026-07-28): no call named
            sole = self._sole_call()
            if sole is None or sole.elicit is None:
                return types.ErrorData(
                    code=types.INVALID_REQUEST, message="the gateway cannot ask the user now"
                )
            return await sole.elicit(params)
        relay: CallRelay | None = found
        if relay is None or relay.elicit is None:
            raise ElicitationUnavailable(
                f"{self.spec.name}: the server asked the user a question that this session cannot "
                "carry; call it from a session that supports elicitation"
            )
        return await relay.elicit(params)

    @asynccontextmanager
    async def _translated(self, what: str, seconds: float) -> AsyncIterator[None]:
        """Every upstream call within ``seconds``; SDK and transport failures become in-band errors.

        A closed connection (the process died, the server went away) also marks the session dead,
        so the next call starts it again after the back-off.
        """
        try:
            with anyio.fail_after(seconds):
                yield
        except InBandError:  # our own answer from inside the call (a question it cannot carry)
            raise
        except ExceptionGroup as group:
            ours = _our_answer(group)
            if ours is None:
                await self._crashed(group)
                raise UpstreamStopped(
                    f"{self.spec.name}: the upstream server stopped during {what}"
                ) from group
            raise ours from group
        except TimeoutError as exc:
            if self._auth_needed:
                raise await self._reauth() from exc
            raise UpstreamTimeout(f"{self.spec.name}: {what} did not answer within {seconds:g} s") from exc
        except MCPError as exc:
            if self._auth_needed:
                self._stopped()
                raise await self._reauth() from exc
            if _too_large(exc):
                raise TooLarge(
                    f"{self.spec.name}: the answer to {what} is over the limit of {self._max_message} bytes"
                ) from exc
            if exc.code != CONNECTION_CLOSED:
                text = f"{self.spec.name}: {what} failed: {exc.message}"
                raise UpstreamError(self.spec.redact(text)) from exc
            await self._crashed(exc)
            raise UpstreamStopped(f"{self.spec.name}: the upstream server stopped during {what}") from exc
        except Exception as exc:
            if self._auth_needed:
                self._stopped()
                raise await self._reauth() from exc
            await self._crashed(exc)
            raise UpstreamStopped(f"{self.spec.name}: the upstream server stopped during {what}") from exc

    async def _reauth(self) -> NeedsReauth:
        """``needs_reauth`` naming the link that authorizes the connection again (the gateway
        starts that authorization); the next call starts a session on the new grant."""
        url = await self._on_auth_needed(self.spec) if self._on_auth_needed is not None else None
        return NeedsReauth(self.spec.name, url)

    async def close(self) -> None:
        """Stop the session (and its process) and wait until it has ended."""
        stop, closed = self._stop, self._closed
        if stop is not None and closed is not None:
            stop.set()
            with anyio.move_on_after(10):
                await closed.wait()
        if self._stderr is not None:
            self._stderr.close()
            self._stderr = None

    async def _ensure(self) -> Client:
        if self._client is not None:
            return self._client
        async with self._lock:
            if self._client is not None:
                return self._client
            wait = self._next_start - time.monotonic()
            if wait > 2.0:
                raise UpstreamError(
                    f"{self.spec.name}: restarting after a failure; retry in {math.ceil(wait)} s"
                )
            if wait > 0:
                await anyio.sleep(wait)
            return await self._start()

    async def _start(self) -> Client:
        if self.spec.oauth is not None and (await self.spec.oauth.vault.tokens())[0] is None:
            raise await self._reauth()  # no grant (yet): nothing to start, no upstream to bother
        ready, stop, closed = anyio.Event(), anyio.Event(), anyio.Event()
        failure: list[BaseException] = []
        self._stop, self._closed = stop, closed
        self._tg.start_soon(self._hold, ready, stop, closed, failure)
        with anyio.move_on_after(self._connect_timeout) as scope:
            await ready.wait()
        if scope.cancelled_caught:
            stop.set()
            self._note_failure()
            raise UpstreamTimeout(
                f"{self.spec.name}: {TIMEOUT}: no answer within {self._connect_timeout:g} s of starting"
            )
        if self._client is None:
            if self._auth_needed:  # not a failure of the server: no back-off before the next start
                raise await self._reauth()
            self._note_failure()
            if self._refused_address is not None:
                raise UpstreamError(f"{self.spec.name}: {self._refused_address.message}")
            if self._refused_status is not None:
                raise UpstreamAuthFailed(
                    f"{self.spec.name}: the server refused the connection's credentials "
                    f"(HTTP {self._refused_status}); update its headers and refresh"
                )
            raise UpstreamError(f"{self.spec.name}: {self._describe(failure[0] if failure else None)}")
        return self._client

    async def _hold(
        self, ready: anyio.Event, stop: anyio.Event, closed: anyio.Event, failure: list[BaseException]
    ) -> None:
        try:
            async with AsyncExitStack() as stack:
                client = Client(
                    self._transport(stack),
                    message_handler=self._on_message,
                    logging_callback=self._on_log,
                    elicitation_callback=self._on_elicit,
                    cache=None,
                )
                await stack.enter_async_context(client)
                self.listings.clear()  # a new session: what the server offers is listed again
                self._watching.clear()  # and it holds no subscription
                self._client = client
                ready.set()
                async with anyio.create_task_group() as watchers:
                    if self._announces_tool_changes(client):
                        watchers.start_soon(self._listen_for_tool_changes, client)
                    await stop.wait()
                    watchers.cancel_scope.cancel()
        except Exception as exc:
            failure.append(exc)
            logger.info("upstream %s ended: %s", self.spec.name, self.spec.redact(repr(exc)))
        finally:
            self._client = None
            ready.set()
            closed.set()

    def _transport(self, stack: AsyncExitStack) -> Any:
        spec = self.spec
        if spec.transport == "stdio":
            if self._stderr is not None:
                self._stderr.close()
            # Kept open after the process ends: its last line is the readable failure reason.
            self._stderr = tempfile.TemporaryFile()  # noqa: SIM115
            return stdio_transport(
                spec.command, env=spec.env, errlog=self._stderr, max_message_bytes=self._max_message
            )
        self._refused_status = None
        self._error_status = None
        self._refused_address = None

        def note_refused_address(exc: AddressRefused) -> None:
            self._refused_address = exc

        async def note_refusal(response: httpx2.Response) -> None:
            if response.status_code in (401, 403):
                self._refused_status = response.status_code
            if response.status_code >= 400 and response.request.method == "POST":
                self._error_status = response.status_code  # the cause when the start fails (#32)

        self._auth_needed = False

        def auth_needed() -> None:
            self._auth_needed = True

        http = UpstreamHttpClient(
            self._addresses,
            note_refused_address,
            auth=session_auth(spec.oauth, spec.url or "", auth_needed) if spec.oauth else None,
            headers={"Accept-Encoding": "identity", **spec.headers},
            timeout=httpx2.Timeout(self._call_timeout, read=None),
            event_hooks={
                # each POST carries its call's W3C trace context (when traces are on)
                "request": [tracing.inject_headers] if tracing.enabled() else [],
                "response": [note_refusal, bound_json_responses(self._max_message)],
            },
        )
        stack.push_async_callback(http.aclose)
        assert spec.url is not None
        return streamable_http_client(spec.url, http_client=http, max_sse_event_size=self._max_message)

    @staticmethod
    def _announces_tool_changes(client: Client) -> bool:
        """On 2026-07-28 connections changes come on a ``subscriptions/listen`` stream, not as
        loose notifications; earlier protocol versions use ``_on_message``."""
        caps = client.server_capabilities
        listed = any(c is not None and c.list_changed for c in (caps.tools, caps.prompts, caps.resources))
        return listed and client.protocol_version in MODERN_PROTOCOL_VERSIONS

    async def _listen_for_tool_changes(self, client: Client) -> None:
        caps = client.server_capabilities
        wanted = {
            kind: bool(c is not None and c.list_changed)
            for kind, c in (("tools", caps.tools), ("prompts", caps.prompts), ("resources", caps.resources))
        }
        try:
            async with client.listen(
                tools_list_changed=wanted["tools"],
                prompts_list_changed=wanted["prompts"],
                resources_list_changed=wanted["resources"],
            ) as subscription:
                async for event in subscription:
                    kind = _changed_kind(event)
                    if kind == "tools" and self._on_tools_changed is not None:
                        self._tg.start_soon(self._on_tools_changed, self.spec.name)
                    elif kind is not None:
                        self._offerings_changed(kind)
        except Exception as exc:  # a lost stream only stops change tracking; calls keep working
            ended = self.spec.redact(repr(exc))
            logger.info("upstream %s: tools/list_changed stream ended: %s", self.spec.name, ended)

    async def _on_message(self, message: Any) -> None:
        if isinstance(message, types.ToolListChangedNotification) and self._on_tools_changed:
            self._tg.start_soon(self._on_tools_changed, self.spec.name)
        elif isinstance(message, types.PromptListChangedNotification):
            self._offerings_changed("prompts")
        elif isinstance(message, types.ResourceListChangedNotification):
            self._offerings_changed("resources")
        elif isinstance(message, types.ResourceUpdatedNotification):
            self._updated(message.params.uri)

    def forget_listings(self, kind: str) -> None:
        """Empty the kept listings of ``kind`` (``prompts``, ``resources``: its templates too)."""
        for key in [k for k in self.listings if k.startswith(kind)]:
            self.listings.pop(key, None)

    def _offerings_changed(self, kind: str) -> None:
        """The server's prompts or resources changed: listed again at the next need, and who
        listens (the gateway's clients) told (R-16.3)."""
        self.forget_listings(kind)
        if self._on_offerings_changed is not None:
            self._tg.start_soon(self._on_offerings_changed, self.spec.name, kind, "")

    async def _crashed(self, exc: BaseException) -> None:
        """The session died under a request: logged with the last line the server wrote to stderr
        (redacted), for the operator to see why; the next call starts another session."""
        last = self._last_stderr_line()
        said = f"; stderr: {last}" if last else ""
        logger.warning("upstream %s crashed: %s%s", self.spec.name, self.spec.redact(repr(exc)), said)
        self._note_failure()
        self._stopped()

    def _stopped(self) -> None:
        """End the session; the next call starts another."""
        if self._stop is not None:
            self._stop.set()
        self._client = None

    def _note_failure(self) -> None:
        self._failures += 1
        delay = min(_MAX_BACKOFF, self._backoff_base * 2 ** (self._failures - 1))
        self._next_start = time.monotonic() + delay

    def _last_stderr_line(self) -> str:
        """The last line a stdio server wrote to stderr, redacted whole and then cut to 300 characters."""
        if self._stderr is None or self._stderr.closed:
            return ""
        end = self._stderr.seek(0, os.SEEK_END)
        self._stderr.seek(max(0, end - _STDERR_TAIL))  # a chatty server's file is never read whole
        lines = self._stderr.read().decode(errors="replace").strip().splitlines()
        return self.spec.redact(lines[-1])[:300] if lines else ""

    def _describe(self, exc: BaseException | None) -> str:
        detail = self._last_stderr_line()
        if self.spec.transport == "http":  # the cause, not the libraries' words (#32)
            cause = http_cause(exc, self._error_status)
            if cause is not None:
                return self.spec.redact(cause)[:500]
        if isinstance(exc, OSError):
            return self.spec.redact(f"cannot start {self.spec.command[0]!r}: {exc.strerror or exc}")
        if exc is None or isinstance(exc, BaseExceptionGroup):
            text = "the server ended during start-up"
        else:
            text = f"{type(exc).__name__}: {exc}"
        return self.spec.redact(f"{text}{'; stderr: ' + detail if detail else ''}")[:500]


def _changed_kind(event: object) -> str | None:
    """``tools``, ``prompts`` or ``resources``: which list a ``subscriptions/listen`` event names."""
    name = type(event).__name__
    for kind in ("Tools", "Prompts", "Resources"):
        if name == f"{kind}ListChanged":
            return kind.lower()
    return None
