"""The gateway's shared state: what every use case of one process works on.

It holds the database, the supervised upstream sessions, the in-memory catalogs, the search index
(used only from worker threads, see ``meaning``) with its cards (see ``cards``), and a policy
snapshot (restrictions, classification overrides, frozen values) cached for the policy cache time
(R-7.6). The use cases live in their own modules (``connections``, ``search``, ``execute``,
``members``, ``control``, ...) and take a ``Gateway`` as first argument; so do the background
modules (``catalogs`` installs catalogs, ``follower`` follows other processes' changes,
``housekeeping``). This module imports none of them: the process's lifecycle, which starts them
all, is ``process.open_gateway``.
"""

from __future__ import annotations

import os
import socket
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio

from toolcrib.addresses import AddressPolicy
from toolcrib.auth.tokens import new_instance_id
from toolcrib.gateway.audit.delivery import AuditStream
from toolcrib.gateway.connections.registry.cache import RegistryCache
from toolcrib.gateway.discovery.cards import CardCache
from toolcrib.gateway.discovery.examples import LearnedExamples
from toolcrib.gateway.discovery.meaning import LiveIndex, Meaning
from toolcrib.gateway.governance.buckets import buckets_for
from toolcrib.policy.approvals import ApprovalRule
from toolcrib.policy.classify import classify
from toolcrib.policy.frozen import FrozenValues, load_frozen
from toolcrib.policy.rate_limits import LimitRule
from toolcrib.policy.rules import Rule
from toolcrib.settings import Settings
from toolcrib.store import approvals as approval_store
from toolcrib.store import outbox as outbox_store
from toolcrib.store import policy as policy_store
from toolcrib.store import rate_limits as limit_store
from toolcrib.store.connections import ConnectionRow, StoredTool
from toolcrib.store.crypto import SecretBox, load_or_create_key
from toolcrib.store.database import Database
from toolcrib.store.instances import Instance
from toolcrib.upstream.supervisor import Upstreams

if TYPE_CHECKING:
    from toolcrib.auth.jwt import JWTVerifier

__all__ = ["Gateway", "PolicySnapshot", "ensure_key_file", "key_file"]


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
        self.registry_cache = RegistryCache()  # what the MCP registries answered
        self.installing = anyio.Lock()
        """Catalogs are installed and forgotten one at a time, in call order (``catalogs``)."""
        self.syncing_now: Counter[str] = Counter()
        """Connections this process is syncing now: the follower leaves them to that sync."""
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

    @property
    def upstreams(self) -> Upstreams:
        assert self._upstreams is not None, "the gateway is not running"
        return self._upstreams

    @property
    def running(self) -> bool:
        """Whether the upstream supervisor runs (``process.open_gateway`` attached it)."""
        return self._upstreams is not None

    def attach(self, upstreams: Upstreams) -> None:
        """The supervisor of this process's upstream sessions, once ``process.open_gateway`` runs it."""
        self._upstreams = upstreams

    def flat_listing_bytes(self, visible: Callable[[str], bool] | None = None) -> int:
        """What a flat ``tools/list`` of the active connected tools ``visible`` keeps would weigh."""
        return sum(
            self.listing_bytes.get(s.record.public_name, 0)
            for account, tools in self.catalogs.items()
            if (row := self.connections.get(account)) is not None and row.status == "active"
            for s in tools.values()
            if visible is None or visible(s.record.public_name)
        )

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


def ensure_key_file(settings: Settings) -> None:
    """Create the generated secret key if there is none yet, so that every worker reads the same one."""
    load_or_create_key(None, key_file(settings))
