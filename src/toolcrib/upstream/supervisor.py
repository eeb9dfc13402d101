"""All upstream sessions of one gateway process: started on demand, stopped when idle (R-13.2).

The MCP SDK (the sessions' client, the OAuth flows) is imported at the first session or flow, not
with this module: a one-shot command of the command line that reaches no upstream runs the
supervisor (it hosts the heartbeat and housekeeping) without paying a second to load it.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable, Coroutine
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

import anyio
from anyio.abc import TaskGroup

from toolcrib.addresses import AddressPolicy
from toolcrib.upstream.spec import OnDone, UpstreamSpec

if TYPE_CHECKING:
    from toolcrib.upstream.oauth import Authorizer
    from toolcrib.upstream.session import UpstreamSession

__all__ = ["OfferingsListener", "Upstreams"]

OfferingsListener = Callable[[str, str, str], Coroutine[Any, Any, None]]
"""Told ``(connection, kind, uri)`` when an upstream's ``prompts`` or ``resources`` list changed
(``uri`` empty) or the resource at ``uri`` was ``updated``."""


class Upstreams:
    """One supervised session per connection, shared by every call (never one per call)."""

    def __init__(
        self,
        task_group: TaskGroup,
        *,
        call_timeout: float,
        connect_timeout: float,
        backoff: float,
        idle_stop: float,
        max_message_bytes: int = 64 * 1024 * 1024,
        on_tools_changed: Callable[[str], Coroutine[Any, Any, None]] | None = None,
        on_auth_needed: Callable[[UpstreamSpec], Coroutine[Any, Any, str | None]] | None = None,
        on_authorized: OnDone | None = None,
        addresses: AddressPolicy | None = None,
        on_offerings_heard: Callable[[str, str], Coroutine[Any, Any, None]] | None = None,
    ) -> None:
        self._tg = task_group
        addresses = addresses or AddressPolicy()  # where sessions and OAuth flows connect
        self._authorizer: Authorizer | None = None
        self._on_authorized = on_authorized
        self._options: dict[str, Any] = {
            "call_timeout": call_timeout,
            "connect_timeout": connect_timeout,
            "backoff": backoff,
            "max_message_bytes": max_message_bytes,
            "addresses": addresses,
        }
        self._idle_stop = idle_stop
        self._on_tools_changed = on_tools_changed
        self._on_auth_needed = on_auth_needed
        self._sessions: dict[tuple[str, str], UpstreamSession] = {}
        """By connection and member: a per-member OAuth connection has one session per member."""
        self._offerings_listeners: list[OfferingsListener] = []
        self._on_offerings_heard = on_offerings_heard
        """Told when one of this process's sessions hears a list change (the other processes are
        told through the store, and come back by :meth:`offerings_changed_elsewhere`)."""

    def listen_offerings(self, listener: OfferingsListener) -> Callable[[], None]:
        """Tell ``listener(connection, kind)`` when an upstream's ``prompts`` or ``resources``
        changed; the answer stops telling it."""
        self._offerings_listeners.append(listener)
        return lambda: self._offerings_listeners.remove(listener)

    async def _offerings_changed(self, name: str, kind: str, uri: str) -> None:
        if kind in ("prompts", "resources") and self._on_offerings_heard is not None:
            await self._on_offerings_heard(name, kind)
        for listener in list(self._offerings_listeners):
            await listener(name, kind, uri)

    async def offerings_changed_elsewhere(self, name: str, kind: str) -> None:
        """Another process's session of ``name`` heard its ``kind`` (``prompts`` or ``resources``)
        change: this process's sessions of it list again at the next need, and its listeners are
        told, as when one of its own sessions hears it (R-16.3, R-15.2)."""
        for (account, _), session in list(self._sessions.items()):
            if account == name:
                session.forget_listings(kind)
        for listener in list(self._offerings_listeners):
            await listener(name, kind, "")

    @classmethod
    @asynccontextmanager
    async def running(cls, **options: Any) -> AsyncIterator[Upstreams]:
        """Upstreams living inside their own task group; every session is closed on exit.

        An error raised by the body comes out as itself, not wrapped in an exception group.
        """
        try:
            async with anyio.create_task_group() as tg:
                upstreams = cls(tg, **options)
                tg.start_soon(upstreams._reap_idle)
                try:
                    yield upstreams
                finally:
                    await upstreams.close_all()
                    tg.cancel_scope.cancel()
        except BaseExceptionGroup as group:
            if len(group.exceptions) == 1:
                raise group.exceptions[0] from None
            raise

    def run_in_background(self, work: Callable[[], Coroutine[Any, Any, None]]) -> None:
        """Run ``work`` beside the sessions, until the supervisor closes (the gateway's heartbeat)."""
        self._tg.start_soon(work)

    @property
    def authorizer(self) -> Authorizer:
        """The interactive OAuth flows of this process (#14), made at the first one."""
        if self._authorizer is None:
            from toolcrib.upstream.oauth import Authorizer  # the SDK's OAuth client: at the first flow

            self._authorizer = Authorizer(
                self._tg,
                connect_timeout=self._options["connect_timeout"],
                on_done=self._on_authorized,
                addresses=self._options["addresses"],
            )
        return self._authorizer

    def pending_link(self, account: str, member: str, starter: str) -> str | None:
        """The start link token of the live flow of (``account``, ``member``) when ``starter``
        started it (R-13.6); None when this process has run no flow at all."""
        return None if self._authorizer is None else self._authorizer.pending_link(account, member, starter)

    def session(self, spec: UpstreamSpec) -> UpstreamSession:
        """The session for ``spec``; a changed spec replaces the old session."""
        key = (spec.name, spec.oauth.member if spec.oauth is not None else "")
        current = self._sessions.get(key)
        if current is not None and current.spec == spec:
            return current
        if current is not None:
            self._tg.start_soon(current.close)
        from toolcrib.upstream.session import UpstreamSession  # the SDK's client: at the first session

        fresh = UpstreamSession(
            spec,
            self._tg,
            on_tools_changed=self._on_tools_changed,
            on_auth_needed=self._on_auth_needed,
            on_offerings_changed=self._offerings_changed,
            **self._options,
        )
        self._sessions[key] = fresh
        return fresh

    async def discard(self, name: str, member: str | None = None) -> None:
        """Close the sessions of connection ``name`` (only ``member``'s, when given)."""
        for key in [k for k in self._sessions if k[0] == name and member in (None, k[1])]:
            session = self._sessions.pop(key, None)
            if session is not None:
                await session.close()

    async def close_all(self) -> None:
        for name, _ in list(self._sessions):
            await self.discard(name)

    async def _reap_idle(self) -> None:
        while True:
            await anyio.sleep(min(30.0, max(self._idle_stop / 4, 0.05)))
            now = time.monotonic()
            for session in list(self._sessions.values()):
                per_member = session.spec.oauth is not None and session.spec.oauth.member != ""
                if (
                    session.running
                    and (session.spec.transport == "stdio" or per_member)
                    and session.idle_for(now) > self._idle_stop
                ):
                    await session.close()
