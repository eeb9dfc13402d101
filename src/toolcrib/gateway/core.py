"""The gateway: the parts of one process that its use cases share.

Each part is a module of its own with the state it owns: ``storage.Storage`` (database, sealing
box, clock), ``live_catalog.LiveCatalog`` (connections and their exact tools in memory),
``policy_cache.PolicyCache`` (the policy snapshot, R-7.6), the upstream supervisor
(``upstream.supervisor.Upstreams``), the search index with its cards, learned examples and held
handles (``discovery``), the bearer check's state (``identity.bearer``) and the audit stream
(``audit.delivery``). A use case takes the parts it uses; the faces hold a ``Gateway`` and pass
them. This module imports no use case: the process's lifecycle, which starts them all, is
``process.open_gateway``.
"""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from toolcrib.addresses import AddressPolicy
from toolcrib.auth.tokens import new_instance_id
from toolcrib.gateway.audit.delivery import AuditStream
from toolcrib.gateway.connections.registry.cache import RegistryCache
from toolcrib.gateway.discovery.cards import CardCache
from toolcrib.gateway.discovery.examples import LearnedExamples
from toolcrib.gateway.discovery.handles import HeldHandles
from toolcrib.gateway.discovery.meaning import LiveIndex, Meaning
from toolcrib.gateway.governance.buckets import buckets_for
from toolcrib.gateway.identity.bearer import Bearers
from toolcrib.gateway.live_catalog import LiveCatalog
from toolcrib.gateway.policy_cache import PolicyCache, PolicySnapshot
from toolcrib.gateway.storage import Storage, key_file
from toolcrib.settings import Settings
from toolcrib.store import outbox as outbox_store
from toolcrib.store.crypto import SecretBox, load_or_create_key
from toolcrib.store.database import Database
from toolcrib.store.instances import Instance
from toolcrib.upstream.supervisor import Upstreams

if TYPE_CHECKING:
    from toolcrib.auth.jwt import JWTVerifier

__all__ = ["Gateway", "PolicySnapshot", "Storage", "ensure_key_file", "key_file"]


class Gateway:
    """The parts one gateway process shares between requests, each of which a use case may take alone.

    ``store`` (database, sealing box, clock), ``catalog`` (the live connections and tools),
    ``policy`` (the cached policy snapshot) and ``upstreams`` (the supervised sessions) are the
    parts most use cases need; the search index with its cards, learned examples and handles
    (``index``, ``cards``, ``learned``, ``handles``), the audit stream, the rate-limit buckets and the
    bearer check's state belong to one feature each.
    """

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
        self.store = Storage(db, box, clock)
        self.catalog = LiveCatalog()
        self.policy = PolicyCache(self.store, settings.policy_cache_seconds)
        self.meaning = meaning or Meaning(None, "not loaded")
        self.index = LiveIndex(self.meaning)
        self.learned = LearnedExamples(db, self.index, clock, enabled=settings.search_learning != "off")
        """The store's search examples in the index's usage channel (R-5.12)."""
        self.cards = CardCache()
        self.handles = HeldHandles(self.store, settings.handle_ttl_seconds)
        self.registry_cache = RegistryCache()  # what the MCP registries answered
        self._upstreams: Upstreams | None = None
        self.buckets = buckets_for(db)  # rate-limit buckets
        self.bearers = Bearers(self.store, _jwt_verifier(settings))
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


def ensure_key_file(settings: Settings) -> None:
    """Create the generated secret key if there is none yet, so that every worker reads the same one."""
    load_or_create_key(None, key_file(settings))
