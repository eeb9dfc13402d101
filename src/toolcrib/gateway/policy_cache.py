"""The policy snapshot: restrictions, classification overrides, frozen values, approval and rate-limit
rules, read from the store together and held for the policy cache time (R-7.6).

A use case asks ``PolicyCache.current()`` once and decides everything of one request on the snapshot
it got, so one request never sees half of an admin's change. An admin act that changed the policy
calls ``reload()`` so that its own answer, and this process's next request, see the change at once.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from toolcrib.gateway.storage import Storage
from toolcrib.policy.approvals import ApprovalRule
from toolcrib.policy.classify import classify
from toolcrib.policy.frozen import FrozenValues, load_frozen
from toolcrib.policy.rate_limits import LimitRule
from toolcrib.policy.rules import Rule
from toolcrib.store import approvals as approval_store
from toolcrib.store import policy as policy_store
from toolcrib.store import rate_limits as limit_store
from toolcrib.store.connections import StoredTool

__all__ = ["PolicyCache", "PolicySnapshot"]


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

    def risk_of(self, stored: StoredTool) -> str:
        """The classification of a tool (R-7.4), the admin override winning."""
        record = stored.record
        return classify(record.name, record.annotations, self.overrides.get((record.account, record.name)))


class PolicyCache:
    """The snapshot this process decides on, re-read from ``storage`` once older than ``ttl`` seconds."""

    def __init__(self, storage: Storage, ttl: float) -> None:
        self._storage = storage
        self._ttl = ttl
        self._held = PolicySnapshot()

    @property
    def held(self) -> PolicySnapshot:
        """The snapshot as held now, however old (no read): for what must not wait on the store."""
        return self._held

    async def current(self) -> PolicySnapshot:
        """The policy snapshot, re-read once it is older than the policy cache time (R-7.6)."""
        loaded_at = self._held.loaded_at
        if loaded_at and self._storage.clock() - loaded_at < self._ttl:
            return self._held
        await self.reload()
        return self._held

    async def reload(self) -> None:
        """Read the whole policy again now (after an admin act changed it)."""
        db = self._storage.db
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
            for r in await policy_store.list_restrictions(db)
        )
        overrides = {(o["account"], o["tool"]): o["risk"] for o in await policy_store.list_overrides(db)}
        frozen = load_frozen(await policy_store.list_frozen(db), self._storage.box.open)
        approval_rules = tuple(
            ApprovalRule(r["id"], r["classification"], r["account"], r["role"])
            for r in await approval_store.list_rules(db)
        )
        self._held = PolicySnapshot(
            rules,
            overrides,
            frozen,
            loaded_at=self._storage.clock() or 1e-9,
            approval_rules=approval_rules,
            limit_rules=tuple(LimitRule(**_limit_fields(r)) for r in await limit_store.list_rules(db)),
        )

    def frozen_secrets(self, account: str) -> tuple[str, ...]:
        """The texts of ``account``'s secret frozen values in the policy as held now (no reload):
        the redaction of the connection's free text reads them at each use (R-9.2, R-13.3)."""
        return self._held.frozen_secrets(account)


def _limit_fields(row: dict[str, Any]) -> dict[str, Any]:
    return {k: row[k] for k in LimitRule.__slots__}
