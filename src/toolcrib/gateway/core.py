"""The gateway: the state every use case works on, opened once per process.

It holds the database, the supervised upstream sessions, the in-memory catalogs, the search index
(used only from worker threads, see ``meaning``) with its cards (see ``cards``), and a policy
snapshot (restrictions, classification overrides, frozen parameters) cached for the policy cache
time (R-7.6). The use cases live in their own modules (``connections``, ``search``, ``execute``,
``members``, ``control``, ...) and take a ``Gateway`` as first argument.
"""

from __future__ import annotations

import logging
import os
import socket
import time
from collections import Counter
from collections.abc import AsyncIterator, Callable, Iterable, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio

from toolcrib import tracing
from toolcrib.addresses import AddressPolicy
from toolcrib.auth.tokens import new_instance_id
from toolcrib.catalog.records import ExactRecord, canonical_json
from toolcrib.errors import StoreError
from toolcrib.gateway.audit_retention import prune_audit
from toolcrib.gateway.audit_stream import AuditStream
from toolcrib.gateway.buckets import buckets_for
from toolcrib.gateway.cards import CardCache
from toolcrib.gateway.examples import LearnedExamples
from toolcrib.gateway.meaning import LiveIndex, Meaning, load_meaning
from toolcrib.policy.approvals import ApprovalRule
from toolcrib.policy.classify import classify
from toolcrib.policy.frozen import FrozenValues, load_frozen
from toolcrib.policy.limits import LimitRule
from toolcrib.policy.rules import Rule
from toolcrib.search.index import SearchDoc
from toolcrib.search.semantic import Encoder
from toolcrib.search.semantic import load_encoder as packaged_encoder
from toolcrib.settings import Settings
from toolcrib.store import approvals as approval_store
from toolcrib.store import connections as conn_store
from toolcrib.store import handles as handle_store
from toolcrib.store import instances as instance_store
from toolcrib.store import keys as key_store
from toolcrib.store import learning as learning_store
from toolcrib.store import leases as lease_store
from toolcrib.store import limits as limit_store
from toolcrib.store import notify
from toolcrib.store import oauth_server as oauth_store
from toolcrib.store import outbox as outbox_store
from toolcrib.store import policy as policy_store
from toolcrib.store import results as result_store
from toolcrib.store.connections import ConnectionRow, StoredTool
from toolcrib.store.crypto import SecretBox, load_or_create_key
from toolcrib.store.database import Database
from toolcrib.store.instances import Instance
from toolcrib.upstream.oauth import OAuthBinding
from toolcrib.upstream.session import UpstreamSpec
from toolcrib.upstream.supervisor import Upstreams

if TYPE_CHECKING:
    from toolcrib.auth.jwt import JWTVerifier

__all__ = ["Gateway", "PolicySnapshot", "key_file"]

logger = logging.getLogger(__name__)

_SEARCH_WAITS_FOR_SYNC = 3.0
"""Seconds a search waits for catalogs its poll found changed elsewhere (the command line, another
replica) to be installed before answering from the index as it is (encoding a large one takes
longer; it goes on in the background)."""
_HOUSEKEEPING = "housekeeping"


@dataclass(frozen=True, slots=True)
class PolicySnapshot:
    """Restrictions, overrides, frozen values, approval and rate-limit rules as read at ``loaded_at``."""

    rules: tuple[Rule, ...] = ()
    overrides: dict[tuple[str, str], str] = field(default_factory=dict)
    frozen_values: FrozenValues = field(default_factory=FrozenValues)
    """Secret ones unsealed once, at load (R-9.2): a call merges them with no unsealing of its own."""
    loaded_at: float = 0.0
    approval_rules: tuple[ApprovalRule, ...] = ()
    limit_rules: tuple[LimitRule, ...] = ()

    def frozen_for(self, account: str, tool: str) -> dict[str, Any]:
        return self.frozen_values.values.get((account, tool), {})

    def secret_params(self, account: str, tool: str) -> frozenset[str]:
        """The frozen fields of ``tool`` whose values are secret (R-9.2)."""
        return self.frozen_values.secret_params.get((account, tool), frozenset())

    def frozen_secrets(self, account: str) -> tuple[str, ...]:
        """The texts of ``account``'s secret frozen values: redacted like its own secrets (R-9.2)."""
        return self.frozen_values.secrets.get(account, ())


class Gateway:
    """Everything one gateway process shares between requests."""

    def __init__(
        self,
        settings: Settings,
        db: Database,
        box: SecretBox,
        *,
        clock: Callable[[], float] = time.time,
        meaning: Meaning | None = None,
        addresses: AddressPolicy | None = None,
    ) -> None:
        self.settings = settings
        self.addresses = addresses or AddressPolicy(deny_private=settings.deny_private_addresses)
        """The hosts this gateway calls on someone's behalf (R-13.5): checked when a connection's
        URL is saved, and on every connection its sessions and OAuth flows open."""
        self.db = db
        self.box = box
        self.clock = clock
        self.meaning = meaning or Meaning(None, "not loaded")
        self.index = LiveIndex(self.meaning)
        self.learned = LearnedExamples(db, self.index, clock, enabled=settings.search_learning != "off")
        """The store's search examples in the index's usage channel (R-5.12)."""
        self.cards = CardCache()
        self._installing = anyio.Lock()  # catalogs are installed one at a time, in call order
        self._syncing: Counter[str] = Counter()  # connections this process is syncing now
        self._synced: anyio.Event | None = None  # set when a search's background install is done
        self.connections: dict[str, ConnectionRow] = {}
        self.catalogs: dict[str, dict[str, StoredTool]] = {}
        self.listing_bytes: dict[str, int] = {}  # public name -> bytes of its flat tools/list entry
        self._upstreams: Upstreams | None = None
        self._policy = PolicySnapshot()
        self.buckets = buckets_for(db)  # rate-limit buckets
        self.jwt_verifier: JWTVerifier | None = _jwt_verifier(settings)
        self.audit_rows_written = 0
        self.audit_stream = AuditStream(settings)  # the audit stream's deliverer (R-11.4, #24)
        outbox_store.use_sinks(db, self.audit_stream.names)
        self.instance = Instance(id=new_instance_id(), host=socket.gethostname(), pid=os.getpid())
        self._last_poll = -1e18

    @classmethod
    @asynccontextmanager
    async def open(
        cls,
        settings: Settings,
        *,
        clock: Callable[[], float] = time.time,
        load_encoder: Callable[[], tuple[Encoder | None, str | None]] = packaged_encoder,
        follow_changes: bool = True,
        addresses: AddressPolicy | None = None,
    ) -> AsyncIterator[Gateway]:
        """Open the database (migrating it), load catalogs, and run upstream sessions until exit.

        The encoder of the meaning channel is loaded in a worker thread (``load_encoder`` replaces
        the packaged one's loader); when it cannot load, search runs on words (R-5.8).
        ``follow_changes`` false: no listener for other processes' changes (a one-shot command
        has nothing to reload, and one cut off at exit mid-query made psycopg warn on stderr).
        ``addresses`` replaces the address policy the settings give (a test's own resolver).
        """
        db = Database(settings.database_url, busy_seconds=settings.store_busy_seconds)
        try:
            await db.migrate()
            key = load_or_create_key(settings.secret_key, key_file(settings))
            box = SecretBox(key)
            await key_store.check_key(db, key)  # one key for every process on this database
            meaning = await load_meaning(settings.semantic, load_encoder)
            gateway = cls(settings, db, box, clock=clock, meaning=meaning, addresses=addresses)
            await gateway._load()
            from toolcrib.gateway import oauth
            from toolcrib.gateway.connections import sync_connection

            async def on_changed(name: str) -> None:
                await sync_connection(gateway, name)

            async def on_auth_needed(spec: UpstreamSpec) -> str | None:
                return await oauth.on_auth_needed(gateway, spec)

            async def on_authorized(binding: OAuthBinding, ok: bool, why: str | None) -> None:
                await oauth.on_authorized(gateway, binding, ok, why)

            async with Upstreams.running(
                call_timeout=settings.upstream_timeout_seconds,
                connect_timeout=settings.connect_timeout_seconds,
                backoff=settings.restart_backoff_seconds,
                idle_stop=settings.idle_stop_seconds,
                max_message_bytes=settings.max_upstream_message_bytes,
                on_tools_changed=on_changed,
                on_auth_needed=on_auth_needed,
                on_authorized=on_authorized,
                addresses=gateway.addresses,
            ) as upstreams:
                gateway._upstreams = upstreams
                upstreams.run_in_background(gateway._heartbeat)
                upstreams.run_in_background(gateway._housekeeping)
                if gateway.audit_stream.names:
                    upstreams.run_in_background(lambda: gateway.audit_stream.run(gateway))
                if follow_changes:
                    upstreams.run_in_background(gateway._follow_changes)
                try:
                    yield gateway
                finally:
                    with anyio.CancelScope(shield=True):
                        await lease_store.release(db, _HOUSEKEEPING, gateway.instance.id)
                        await instance_store.retire(db, gateway.instance)
                    if gateway.jwt_verifier is not None:
                        await gateway.jwt_verifier.aclose()
                    gateway.index.close()
        finally:
            await db.close()

    @property
    def upstreams(self) -> Upstreams:
        assert self._upstreams is not None, "the gateway is not running"
        return self._upstreams

    async def _load(self) -> None:
        """Catalogs of every connection into memory and the search index; dead calls marked unknown."""
        await instance_store.register(self.db, self.instance, self.clock())
        await self.recover_orphans()
        await self.purge_expired()
        await self.sync_from_store(force=True)

    async def recover_orphans(self) -> int:
        """Calls left pending by a gateway process that is gone read ``unknown`` (R-11.1)."""
        stale_before = self.clock() - 3 * self.settings.heartbeat_seconds
        return await instance_store.recover_orphans(self.db, self.instance, stale_before=stale_before)

    async def _heartbeat(self) -> None:
        while True:
            await anyio.sleep(self.settings.heartbeat_seconds)
            try:
                await instance_store.beat(self.db, self.instance, self.clock())
                await self.recover_orphans()
            except StoreError:
                logger.warning("heartbeat: the database is unavailable", exc_info=True)

    async def _housekeeping(self) -> None:
        while True:
            await anyio.sleep(self.settings.housekeeping_seconds)
            try:
                await self.housekeep()
            except StoreError:
                logger.warning("housekeeping: the database is unavailable", exc_info=True)

    async def housekeep(self) -> bool:
        """One round of housekeeping, if this process holds (or takes) the lease; whether it ran.

        Expired handles, stored results and rested rate-limit buckets are deleted, calls of dead
        processes read ``unknown``, and dead processes are forgotten. The lease outlives a few
        rounds, so a holder that dies is replaced after at most three intervals.
        """
        now = self.clock()
        if not self.buckets.shared:  # this process's own rate-limit buckets: its own to prune
            await self.buckets.prune(now)
        ttl = 3 * self.settings.housekeeping_seconds
        if not await lease_store.acquire(self.db, _HOUSEKEEPING, self.instance.id, now=now, ttl=ttl):
            return False
        # The lease says whose turn it is; on PostgreSQL the advisory lock also keeps a holder
        # paused past its lease from running beside the next one.
        async with self.db.exclusive(_HOUSEKEEPING) as alone:
            if not alone:
                return False
            await self.purge_expired()
            if self.buckets.shared:
                await self.buckets.prune(self.clock())
            await self.recover_orphans()
            stale_before = self.clock() - 3 * self.settings.heartbeat_seconds
            await instance_store.prune(self.db, self.instance, stale_before=stale_before)
            await prune_audit(self)  # retention
        return True

    async def _follow_changes(self) -> None:
        """On PostgreSQL: reload at once what another process announces it changed (R-15.2)."""
        await notify.listen(self.db, self.on_change)

    async def on_change(self, kind: str) -> None:
        """Another process changed ``kind`` (``notify.CATALOG``, ``notify.POLICY`` or ``notify.ALL``)."""
        try:
            if kind in (notify.POLICY, notify.ALL):
                await self.reload_policy()
            if kind in (notify.CATALOG, notify.ALL):
                await self.sync_from_store(force=True)
            if kind == notify.ALL:
                await self.learned.reload()
            elif kind.startswith(notify.EXAMPLES):  # a tool's search examples
                await self.learned.on_note(kind)
        except StoreError:
            logger.warning("change notification: the database is unavailable", exc_info=True)

    async def sync_from_store(self, *, force: bool = False, wait: bool = True) -> None:
        """Pick up connections another process changed (the CLI, another replica, R-15.2).

        Polls the connections table at most every ``catalog_poll_seconds``; a connection whose
        catalog version, status, label or update time differs from what this process holds has its
        catalog reloaded from the store, and one that is gone is forgotten. With ``wait`` false
        (search), the poll runs in the background, behind any catalog being installed (encoding a
        large one takes seconds), and the caller waits for it at most ``_SEARCH_WAITS_FOR_SYNC``: a
        small catalog is searchable at once, a large one once installed, and the search meanwhile
        answers from the index as it is.
        """
        now = time.monotonic()
        if not force and now - self._last_poll < self.settings.catalog_poll_seconds:
            return
        with tracing.child_span("catalog.poll"):  # a poll that reads the store, in a traced call
            await self._poll(now, wait)

    async def _poll(self, now: float, wait: bool) -> None:
        if not wait and self._upstreams is not None:
            synced = self._synced or self._poll_behind(self._upstreams)
            with anyio.move_on_after(_SEARCH_WAITS_FOR_SYNC):
                await synced.wait()
            return
        self._last_poll = now
        rows = {row.name: row for row in await conn_store.list_connections(self.db)}
        for name in set(self.connections) - set(rows):
            await self.forget_connection(name)
            if self._upstreams is not None:
                await self._upstreams.discard(name)
        changed = [row for row in rows.values() if self._stale(row)]
        catalogs = {row.name: await conn_store.load_catalog(self.db, row.name) for row in changed}
        if len(changed) > 1:  # a start, or catching up: every missing vector encoded at once, on every core
            docs = await anyio.to_thread.run_sync(self._documents, changed, catalogs)
            await self.index.tool_vectors(self.db, docs)
        for row in changed:
            await self.install_catalog(row, catalogs[row.name])
        if self.db.is_sqlite:  # no announcements on SQLite: examples recorded elsewhere
            await self.learned.poll()

    def _stale(self, row: ConnectionRow) -> bool:
        """Whether the stored ``row`` is newer than what this process holds, and this poll's to
        install: not while this process syncs it (it added it, say), as that sync installs it."""
        held = self.connections.get(row.name)
        return (held is None or _version(held) != _version(row)) and row.name not in self._syncing

    def _poll_behind(self, upstreams: Upstreams) -> anyio.Event:
        """Start one poll in the background (one at a time); the event is set when it is done."""
        synced = self._synced = anyio.Event()

        async def poll() -> None:
            try:
                await self.sync_from_store(force=True)
            except Exception:  # nothing may escape a background task (it would end the gateway)
                logger.exception("catalog sync: connections changed elsewhere could not be installed")
            finally:
                self._synced = None
                synced.set()

        upstreams.run_in_background(poll)
        return synced

    async def purge_expired(self) -> None:
        """Forget action handles and stored results past their lifetime (R-5.10, R-12.3), and the
        authorization server's expired codes, tokens and single-use values, and the clients that
        registered but never got a grant within ``oauth_unused_client_days`` (R-7.7)."""
        now = self.clock()
        await handle_store.purge_handles(self.db, now - self.settings.handle_ttl_seconds)
        await learning_store.purge_searches(self.db, now - self.settings.handle_ttl_seconds)
        await result_store.purge_results(self.db, now - self.settings.result_ttl_seconds)
        await approval_store.purge(self.db, now)
        await oauth_store.purge(self.db, now, now - self.settings.oauth_unused_client_days * 86400)

    @contextmanager
    def syncing(self, name: str) -> Iterator[None]:
        """While this process syncs ``name``, a poll of the store leaves it to that sync, which
        installs what it stores: a search's poll then does not wait for it (``sync_from_store``)."""
        self._syncing[name] += 1
        try:
            yield
        finally:
            self._syncing[name] -= 1
            if not self._syncing[name]:
                del self._syncing[name]

    async def install_catalog(self, row: ConnectionRow, stored: list[StoredTool]) -> None:
        """Make ``stored`` the live catalog of ``row`` (only active connections are searchable).

        Everything that costs CPU per tool (search documents, flat-listing sizes, cards, vectors)
        is computed in worker threads, the vectors taken from the store's cache where it has them;
        the event loop only swaps the results in.
        """
        async with self._installing:
            usable = {s.record.name: s for s in stored if s.refused is None}
            policy = await self.policy()
            active = row.status == "active"
            docs, listing = await anyio.to_thread.run_sync(self._prepare, row, usable, policy, active)
            vectors = await self.index.tool_vectors(self.db, docs) if active else None
            self.connections[row.name] = row
            old = self.catalogs.get(row.name, {})
            for gone in old.values():
                self.listing_bytes.pop(gone.record.public_name, None)
            self.cards.forget({s.record.public_name for s in old.values()} - set(listing))
            self.catalogs[row.name] = usable
            self.listing_bytes.update(listing)
            if active:
                await self.index.replace(row.name, docs, vectors)
            else:
                await self.index.remove(row.name)
            await self.learned.reload_account(row.name, (s.record.public_name for s in usable.values()))

    def _prepare(
        self, row: ConnectionRow, usable: dict[str, StoredTool], policy: PolicySnapshot, active: bool
    ) -> tuple[list[SearchDoc], dict[str, int]]:
        """Search documents, flat-listing sizes and cards of a catalog (worker-thread work).

        A held tool (R-13.4) stays in the catalog, so that executing it answers ``tool_changed``,
        but gets no document, no card and no listing size: nothing shows its offered definition.
        """
        shown = [s for s in usable.values() if not s.held]
        listing = {s.record.public_name: _listing_entry_bytes(s.record) for s in shown}
        if not active:
            return [], listing
        self.cards.build(
            (s.record, self.risk_of(policy, s), policy.frozen_for(row.name, s.record.name).keys())
            for s in shown
        )
        return _search_docs(row, shown), listing

    def _documents(self, rows: list[ConnectionRow], catalogs: dict[str, list[StoredTool]]) -> list[SearchDoc]:
        """The search documents of the active ones of ``rows`` (worker-thread work)."""
        return [
            doc
            for row in rows
            if row.status == "active"
            for doc in _search_docs(row, (s for s in catalogs[row.name] if s.refused is None and not s.held))
        ]

    def flat_listing_bytes(self, visible: Callable[[str], bool] | None = None) -> int:
        """What a flat ``tools/list`` of the active connected tools ``visible`` keeps would weigh."""
        return sum(
            self.listing_bytes.get(s.record.public_name, 0)
            for account, tools in self.catalogs.items()
            if (row := self.connections.get(account)) is not None and row.status == "active"
            for s in tools.values()
            if visible is None or visible(s.record.public_name)
        )

    async def forget_connection(self, name: str) -> None:
        self.connections.pop(name, None)
        for old in self.catalogs.pop(name, {}).values():
            self.listing_bytes.pop(old.record.public_name, None)
            self.cards.forget([old.record.public_name])
        await self.index.remove(name)
        await self.learned.drop_account(name)

    def lookup(self, public_name: str) -> tuple[ConnectionRow, StoredTool] | None:
        """The connection and exact record behind a public name ``{account}__{tool}``."""
        account, sep, tool = public_name.partition("__")
        row = self.connections.get(account)
        if not sep or row is None:
            return None
        stored = self.catalogs.get(account, {}).get(tool)
        return (row, stored) if stored is not None else None

    async def policy(self) -> PolicySnapshot:
        """The policy snapshot, re-read once it is older than the policy cache time (R-7.6)."""
        now = self.clock()
        if now - self._policy.loaded_at < self.settings.policy_cache_seconds and self._policy.loaded_at:
            return self._policy
        await self.reload_policy()
        return self._policy

    async def reload_policy(self) -> None:
        rules = tuple(
            Rule(
                id=r["id"],
                effect=r["effect"],
                target_kind=r["target_kind"],
                target=r["target"],
                connector=r["connector"],
                account=r["account"],
                tool=r["tool"],
            )
            for r in await policy_store.list_restrictions(self.db)
        )
        overrides = {(o["account"], o["tool"]): o["risk"] for o in await policy_store.list_overrides(self.db)}
        frozen = load_frozen(await policy_store.list_frozen(self.db), self.box.open)
        approval_rules = tuple(
            ApprovalRule(r["id"], r["classification"], r["account"], r["role"])
            for r in await approval_store.list_rules(self.db)
        )
        self._policy = PolicySnapshot(
            rules,
            overrides,
            frozen,
            loaded_at=self.clock() or 1e-9,
            approval_rules=approval_rules,
            limit_rules=tuple(LimitRule(**_limit_fields(r)) for r in await limit_store.list_rules(self.db)),
        )

    def frozen_secrets(self, account: str) -> tuple[str, ...]:
        """The texts of ``account``'s secret frozen values in the policy as held now (no reload):
        the redaction of the connection's free text reads them at each use (R-9.2, R-13.3)."""
        return self._policy.frozen_secrets(account)

    def risk_of(self, policy: PolicySnapshot, stored: StoredTool) -> str:
        """The classification of a tool (R-7.4), the admin override winning."""
        record = stored.record
        return classify(record.name, record.annotations, policy.overrides.get((record.account, record.name)))


def _limit_fields(row: dict[str, Any]) -> dict[str, Any]:
    return {k: row[k] for k in LimitRule.__slots__}


def _listing_entry_bytes(record: ExactRecord) -> int:
    entry = {
        "name": record.public_name,
        "description": record.description,
        "inputSchema": record.input_schema,
    }
    return len(canonical_json(entry).encode())


def _search_docs(row: ConnectionRow, stored: Iterable[StoredTool]) -> list[SearchDoc]:
    return [
        SearchDoc(
            public_name=s.record.public_name,
            account=row.name,
            connector=row.connector,
            name=s.record.name,
            description=str((s.card or {}).get("description") or ""),
        )
        for s in stored
    ]


def _version(row: ConnectionRow) -> tuple[int, str, str, float]:
    return (row.catalog_version, row.status, row.connector, row.updated_at)


def _jwt_verifier(settings: Settings) -> JWTVerifier | None:
    if not settings.oauth_issuer:
        return None
    from toolcrib.auth.jwt import JWTSettings, JWTVerifier

    issuer = settings.oauth_issuer.rstrip("/")
    return JWTVerifier(
        JWTSettings(
            issuer=settings.oauth_issuer,
            audience=settings.oauth_audience or settings.resource_url + "/mcp",
            jwks_url=settings.oauth_jwks_url or issuer + "/.well-known/jwks.json",
        )
    )


def key_file(settings: Settings) -> Path:
    """Where a generated secret key is kept: beside a SQLite database, else in ``.toolcrib`` here."""
    path = settings.sqlite_path()
    base = path.parent if path is not None else Path.cwd()
    return base / ".toolcrib" / "secret.key"
