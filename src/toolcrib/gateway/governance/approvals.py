"""Approvals for calls that need one (#14; the approval step of R-11.2), and their rules.

The step runs once the arguments are valid (pipeline step 12), before the final outbound check
(step 13, which so also covers the time spent waiting for an answer) and the upstream call. When
an approval rule matches the call (classification, account, role), the call runs only:

- after the member accepted the question the gateway asked (MCP elicitation, showing the exact
  tool, account and arguments) — the member is then the approver; or
- once, after an admin or owner approved it (``approvals approve``): the call then answers
  ``approval_required`` with the approval's id and link, and the same call (same member, tool
  and arguments) made again runs once.

An approval is bound to the member, the public tool name and the SHA-256 of the exact provider
arguments (frozen values merged), is single-use and expires after ``approval_ttl_seconds``. The
arguments themselves are kept with it sealed with the gateway's secret key, so that who may
approve can read the call they decide (:func:`approval_details`, the console's approval page);
they are forgotten once the approval is used or declined, and deleted with it once it expired.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Mapping
from typing import Any

from toolcrib.auth.tokens import new_approval_id, new_rule_id
from toolcrib.errors import ApprovalDeclined, ApprovalRequired, ConfigError, NotFound
from toolcrib.gateway.calls.interaction import ApprovalPrompt, AskLater, Interaction
from toolcrib.gateway.core import Gateway, PolicySnapshot
from toolcrib.gateway.policy_cache import PolicyCache
from toolcrib.gateway.storage import Storage
from toolcrib.policy.approvals import ApprovalRule, requires_approval, validate_approval_rule
from toolcrib.policy.gates import Principal, require_operation
from toolcrib.store import approvals as store
from toolcrib.store.approvals import Approval

__all__ = [
    "PENDING_LISTED",
    "approval_details",
    "approval_view",
    "approve",
    "arguments_sha256",
    "decline",
    "get_approval",
    "list_approval_rules",
    "pending_approvals",
    "rule_view",
    "set_approval_rule",
    "settle",
]


def arguments_sha256(arguments: Mapping[str, Any]) -> str:
    canonical = json.dumps(arguments, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode()).hexdigest()


def approval_url(gw: Gateway, approval_id: str) -> str:
    return f"{gw.settings.resource_url}/admin/approvals/{approval_id}"


async def settle(
    gw: Gateway,
    principal: Principal,
    *,
    account: str,
    operation: str,
    risk: str,
    exact: dict[str, Any],
    interaction: Interaction,
    shown: dict[str, Any] | None = None,
) -> str | None:
    """The approval step: None when no rule asks for one, else who approved this call.

    The approval is bound to ``exact``; the member asked and whoever may approve read ``shown``
    (``exact`` with secret frozen values redacted, R-9.2), which is also what is kept sealed.

    Raises ``approval_required`` (nobody could be asked now), ``approval_declined``, or
    :class:`AskLater` (the MCP face asks and the client calls again with the answer).
    """
    rules = (await gw.policy.current()).approval_rules
    if requires_approval(rules, risk=risk, account=account, role=principal.role) is None:
        return None
    digest = arguments_sha256(exact)
    if interaction.answer is not None:
        return await _answered(gw.store, principal, operation, digest, *interaction.answer)
    now = gw.store.clock()
    seen = exact if shown is None else shown
    approver = await store.consume(gw.store.db, principal.member, operation, digest, now)
    if approver is not None:
        return approver
    approval = Approval(
        id=new_approval_id(),
        member=principal.member,
        operation=operation,
        arguments_sha256=digest,
        status="pending",
        approved_by=None,
        created_at=now,
        expires_at=now + gw.settings.approval_ttl_seconds,
        arguments=gw.store.box.seal(seen),
    )
    await store.insert_approval(gw.store.db, approval)
    prompt = ApprovalPrompt(approval.id, principal.member, operation, account, seen)
    if interaction.ask is not None:
        return await _answered(
            gw.store, principal, operation, digest, approval.id, await interaction.ask(prompt)
        )
    if interaction.ask_later:
        raise AskLater(prompt)
    raise ApprovalRequired(approval.id, approval_url(gw, approval.id), approval.expires_at)


async def _answered(
    storage: Storage, principal: Principal, operation: str, digest: str, approval_id: str, action: str
) -> str:
    """The member's own answer to the question about ``approval_id``; they are the approver."""
    approval = await store.get_approval(storage.db, approval_id)
    bound = approval is not None and (approval.member, approval.operation, approval.arguments_sha256) == (
        principal.member,
        operation,
        digest,
    )
    if not bound:
        raise ApprovalDeclined("the answer names no approval of this call; call again to be asked")
    accepted = action == "accept"
    status = "used" if accepted else "declined"
    decided = await store.decide(
        storage.db,
        approval_id,
        status=status,
        approved_by=principal.member if accepted else None,
        now=storage.clock(),
    )
    if not decided:
        raise ApprovalDeclined("this approval was already answered or has expired; call again to be asked")
    if not accepted:
        raise ApprovalDeclined(f"{principal.member} declined the call of {operation}")
    return principal.member


def rule_view(rule: ApprovalRule) -> dict[str, Any]:
    return dataclasses.asdict(rule)


PENDING_LISTED = 200
"""At most this many waiting approvals are listed, oldest first."""


def approval_view(approval: Approval) -> dict[str, Any]:
    """The approval without its sealed arguments (:func:`approval_details` opens them)."""
    view = approval.to_json()
    del view["arguments"]
    return view


def _details(
    gw: Gateway, approval: Approval, policy: PolicySnapshot, *, with_arguments: bool
) -> dict[str, Any]:
    """Who asked, the tool, its account and classification (as the policy has it now), and, while
    the approval may still let the call run, the call's exact arguments (else ``None``)."""
    live = approval.status in ("pending", "approved") and approval.expires_at > gw.store.clock()
    found = gw.catalog.lookup(approval.operation)
    return {
        **approval_view(approval),
        "account": approval.operation.partition("__")[0],
        "classification": policy.risk_of(found[1]) if found is not None else None,
        "expired": approval.expires_at <= gw.store.clock(),
        "arguments": gw.store.box.open(approval.arguments) if with_arguments and live else None,
    }


async def approval_details(gw: Gateway, approval_id: str, actor: Principal) -> dict[str, Any]:
    """One approval with the exact arguments of its call, for who may approve it (restrictions:write):
    the approval link's page and ``GET /api/approvals/{id}``."""
    require_operation(actor, "restrictions:write", "get")
    approval = await _approval(gw.store, approval_id)
    return _details(gw, approval, await gw.policy.current(), with_arguments=True)


async def pending_approvals(gw: Gateway, actor: Principal) -> list[dict[str, Any]]:
    """The approvals waiting for an answer, oldest first (restrictions:write), without arguments."""
    require_operation(actor, "restrictions:write", "list")
    policy = await gw.policy.current()
    waiting = await store.list_pending(gw.store.db, gw.store.clock(), PENDING_LISTED)
    return [_details(gw, a, policy, with_arguments=False) for a in waiting]


async def get_approval(storage: Storage, approval_id: str, actor: Principal) -> Approval:
    """One approval, to show an approver what it would let run (restrictions:read)."""
    require_operation(actor, "restrictions:read", "get")
    return await _approval(storage, approval_id)


async def _approval(storage: Storage, approval_id: str) -> Approval:
    approval = await store.get_approval(storage.db, approval_id)
    if approval is None:
        raise NotFound(f"no approval {approval_id!r}")
    return approval


async def approve(storage: Storage, approval_id: str, actor: Principal) -> Approval:
    """An admin or owner approves a waiting call (restrictions:write); it may then run once."""
    return await _answer(storage, approval_id, "approve", actor)


async def decline(storage: Storage, approval_id: str, actor: Principal) -> Approval:
    """An admin or owner declines a waiting call (restrictions:write, like approving): it does not
    run and its arguments are forgotten; the member calling it again asks for a new approval. The
    console and the command line call this; it is no control-plane tool, which would grow every
    owner's ``tools/list`` (R-10.2)."""
    return await _answer(storage, approval_id, "decline", actor)


async def _answer(storage: Storage, approval_id: str, action: str, actor: Principal) -> Approval:
    require_operation(actor, "restrictions:write", action)
    who = actor.member
    approving = action == "approve"
    status, approved_by = ("approved", who) if approving else ("declined", None)
    if not await store.decide(
        storage.db, approval_id, status=status, approved_by=approved_by, now=storage.clock()
    ):
        if await store.get_approval(storage.db, approval_id) is None:
            raise NotFound(f"no approval {approval_id!r}")
        raise ConfigError(f"approval {approval_id} is not waiting for an answer (answered or expired)")
    return await _approval(storage, approval_id)


async def set_approval_rule(
    gw: Gateway,
    classification: str,
    *,
    account: str | None = None,
    role: str | None = None,
    required: bool = True,
    actor: Principal,
) -> list[ApprovalRule]:
    """Require (or stop requiring) approvals for calls of a classification, optionally of one
    account and/or one role; takes effect within the policy cache time (R-7.6). The rules after."""
    require_operation(actor, "restrictions:write", "set")
    rule = ApprovalRule(new_rule_id(), classification, account, role)
    validate_approval_rule(rule)
    if account is not None and account not in gw.catalog.connections:
        raise NotFound(f"no connection named {account!r}")
    await store.delete_rules(gw.store.db, classification, account, role)
    if required:
        values = dataclasses.asdict(rule)
        await store.insert_rule(gw.store.db, values)
    await gw.policy.reload()
    return list((await gw.policy.current()).approval_rules)


async def list_approval_rules(policy_cache: PolicyCache, actor: Principal) -> list[ApprovalRule]:
    require_operation(actor, "restrictions:read", "list")
    await policy_cache.reload()
    return list((await policy_cache.current()).approval_rules)
