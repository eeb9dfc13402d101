"""Members from the identity provider (R-7.8): verified claims become a member with a role.

Decisions:

- **Which role.** ``TOOLCRIB_OIDC_ROLE_MAP`` maps groups (the values of the claim
  ``TOOLCRIB_OIDC_ROLE_CLAIM``) to roles; of all the roles a person's groups map to, the highest
  in :data:`ROLE_ORDER` wins: ``admin``, ``member``, ``auditor``, ``billing_admin``
  (a person in both an admins' and a staff group is an admin; ``member``, the role that uses tools,
  ranks above the read-only roles). ``owner`` cannot be mapped (nor ``guest``, which holds
  nothing): such a map is refused at start-up.
  With no mapped group, ``TOOLCRIB_OIDC_DEFAULT_ROLE``; without one, the person is refused
  (``access_denied``, ``no_role``) and gets no member and no grant.
- **Who.** A member is the person with the provider's ``iss`` and ``sub``; at first sign-in it is
  the member whose name (or recorded e-mail) is their e-mail (one an admin may have created
  beforehand), else a new member named by the e-mail. A member already bound to another
  ``sub`` of the same provider is not taken over by someone who now has that e-mail
  (``account_mismatch``). ``email_verified: false`` is refused; ``TOOLCRIB_OIDC_ALLOWED_DOMAINS``
  limits the e-mail's domain.
- **Re-mapping.** The role is mapped again at every sign-in (and when the authorization server
  calls :func:`refresh_member`), down as well as up, unless the role is pinned: an admin's
  ``members update_role`` pins it (``pinned: false`` unpins it, letting the groups decide again at
  the next sign-in). An owner is never re-mapped. A member whose groups now map to no role is set
  to ``guest`` (which holds nothing), so grants it already holds stop reaching anything, and it is
  refused.
- **Standing.** A suspended or removed member is refused (``access_denied``).
- **Vouching (R-7.11).** A member from the provider keeps OAuth grants only while the provider
  vouches for them. At sign-in the provider's refresh token (``offline_access``, asked for when the
  provider offers it) is kept sealed with the gateway's key (``store.idp_vouches``); at each
  refresh of one of their grants the provider is asked again with it, and its fresh claims
  re-map the role (unless pinned). The provider refusing the token or the person (or their groups
  mapping to no role) refuses the refresh, and the authorization server revokes the grant. When
  the provider cannot be asked (unreachable, an error, no refresh token given), the refresh is
  answered only while its last word for the person (the sign-in, or the last refresh that
  reached it) is less than ``TOOLCRIB_OIDC_VOUCH_SECONDS`` old.

These functions take no principal: they run before anyone is signed in, on claims the provider
signed (``auth.oidc`` verified them).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from toolcrib.errors import ConfigError, SignInRefused
from toolcrib.gateway.core import Gateway
from toolcrib.gateway.identity.grants import SESSION_SECONDS, new_session_grant
from toolcrib.gateway.storage import Storage
from toolcrib.policy.roles import ROLES, has_permission
from toolcrib.policy.scopes import SCOPES
from toolcrib.settings import Settings
from toolcrib.store import identities, idp_vouches, single_use
from toolcrib.store.identities import Identity

if TYPE_CHECKING:  # Authlib is loaded only where an identity provider is configured
    from collections.abc import Callable

    from toolcrib.auth.oidc import OIDCClient, Pending

__all__ = [
    "ROLE_ORDER",
    "SESSION_SECONDS",
    "SignedIn",
    "check_settings",
    "complete_sign_in",
    "mint_session",
    "parse_role_map",
    "refresh_member",
    "role_for",
    "session_scopes",
    "sign_in_member",
]

logger = logging.getLogger(__name__)

ROLE_ORDER: tuple[str, ...] = ("admin", "member", "auditor", "billing_admin")
"""Mappable roles, highest first (``owner`` is never mapped; ``guest`` is what an unmapped member is
left with)."""
"""A session grant lasts a working day, like the console's cookie."""
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._@-]{0,79}$")
_MAX_GROUPS = 1000


@dataclass(frozen=True, slots=True)
class SignedIn:
    """The member a sign-in ended with, and whether it was created by it."""

    member: Identity
    created: bool


def parse_role_map(text: str) -> dict[str, str]:
    """``"tc-admins=admin,staff=member"`` as a dict; ConfigError for an unknown or unmappable role."""
    pairs: dict[str, str] = {}
    for item in (p.strip() for p in text.split(",")):
        if not item:
            continue
        group, sep, role = (s.strip() for s in item.rpartition("="))
        if not sep or not group or role not in ROLE_ORDER:
            allowed = ", ".join(ROLE_ORDER)
            raise ConfigError(f"TOOLCRIB_OIDC_ROLE_MAP entry {item!r}: expected group=role, roles {allowed}")
        pairs[group] = role
    return pairs


def check_settings(settings: Settings) -> None:
    """Refuse at start-up what would refuse everyone later: a bad map or default role."""
    parse_role_map(settings.oidc_role_map)
    if settings.oidc_default_role is not None and settings.oidc_default_role not in ROLE_ORDER:
        raise ConfigError(f"TOOLCRIB_OIDC_DEFAULT_ROLE must be one of {', '.join(ROLE_ORDER)}")


def _groups(claims: Mapping[str, Any], claim: str) -> list[str]:
    value = claims.get(claim)
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [g for g in value[:_MAX_GROUPS] if isinstance(g, str)]
    return []


def role_for(claims: Mapping[str, Any], settings: Settings) -> str | None:
    """The highest role the person's groups map to, else the default role, else None."""
    mapping = parse_role_map(settings.oidc_role_map)
    mapped = {mapping[g] for g in _groups(claims, settings.oidc_role_claim) if g in mapping}
    for role in ROLE_ORDER:
        if role in mapped:
            return role
    return settings.oidc_default_role


def _email(claims: Mapping[str, Any], settings: Settings) -> str:
    email = claims.get("email")
    if not isinstance(email, str) or "@" not in email or len(email) > 320:
        raise _refused("no_email", "The identity provider sent no e-mail address for you.")
    if claims.get("email_verified") in (False, "false"):
        raise _refused("email_unverified", "Your identity provider has not verified your e-mail address.")
    email = email.strip().lower()
    domain = email.rsplit("@", 1)[1]
    allowed = [d.strip().lower().lstrip("@") for d in settings.oidc_allowed_domains]
    if allowed and domain not in allowed:
        raise _refused("domain_not_allowed", f"People of {domain} cannot sign in to this organization.")
    return email


def _refused(reason: str, message: str) -> SignInRefused:
    logger.warning("OIDC sign-in refused: access_denied (%s)", reason)
    return SignInRefused("access_denied", reason, message)


def _pick(found: list[Identity], issuer: str, subject: str) -> Identity | None:
    if not found:
        return None
    first = found[0]
    if first.issuer == issuer and first.subject == subject:
        return first
    if first.subject is not None and first.issuer == issuer:
        raise _refused("account_mismatch", "This e-mail belongs to another account of the identity provider.")
    return first


async def sign_in_member(gw: Gateway, claims: Mapping[str, Any]) -> SignedIn:
    """The member these verified claims are, created or re-mapped (R-7.8); SignInRefused when the
    person may not sign in. Nothing is written for a refused person."""
    settings = gw.settings
    issuer, subject = str(claims.get("iss", "")), claims.get("sub")
    if not isinstance(subject, str) or not subject or len(subject) > 255:
        raise _refused("no_subject", "The identity provider did not say who you are.")
    email = _email(claims, settings)
    role = role_for(claims, settings)
    member = _pick(
        await identities.find_identity(gw.store.db, issuer=issuer, subject=subject, email=email),
        issuer,
        subject,
    )
    if member is None:
        return SignedIn(await _create(gw.store, email, role, subject, issuer), created=True)
    return SignedIn(
        await _remap(gw.store, member, role, {"email": email, "subject": subject, "issuer": issuer}), False
    )


async def _create(storage: Storage, email: str, role: str | None, subject: str, issuer: str) -> Identity:
    if role is None:
        raise _refused("no_role", "None of your groups gives you a role in this organization.")
    if not _NAME.match(email):
        raise _refused("email_not_a_name", "Your e-mail address cannot be used as a member name here.")
    created = await identities.insert_identity(
        storage.db, name=email, role=role, email=email, subject=subject, issuer=issuer, now=storage.clock()
    )
    if not created:  # another replica created it a moment ago; it is then re-mapped like any other
        again = await identities.find_identity(storage.db, issuer=issuer, subject=subject, email=email)
        picked = _pick(again, issuer, subject)
        if picked is None:
            raise _refused("account_mismatch", "A member with this name exists.")
        return await _remap(storage, picked, role, {"email": email, "subject": subject, "issuer": issuer})
    logger.info("OIDC sign-in created member %s with role %s", email, role)
    return Identity(email, role, "active", email, subject, issuer, "oidc", False)


async def _remap(storage: Storage, member: Identity, role: str | None, seen: dict[str, str]) -> Identity:
    if member.status != "active":
        raise _refused(f"member_{member.status}", f"Your membership is {member.status}.")
    keep = member.role_pinned or member.role == "owner"
    new_role = member.role if keep else (role or "guest")
    changes: dict[str, Any] = {k: v for k, v in seen.items() if getattr(member, k) != v}
    if member.source != "oidc":
        changes["source"] = "oidc"
    if new_role != member.role:
        changes["role"] = new_role
        logger.info("OIDC sign-in re-mapped member %s from %s to %s", member.name, member.role, new_role)
    if changes:
        await identities.update_identity(storage.db, member.name, **changes)
    if not keep and role is None:
        raise _refused("no_role", "None of your groups gives you a role in this organization any more.")
    return Identity(
        member.name, new_role, member.status, seen["email"], seen["subject"], seen["issuer"], "oidc",
        member.role_pinned,
    )  # fmt: skip


async def refresh_member(
    gw: Gateway,
    name: str,
    claims: Mapping[str, Any] | None = None,
    *,
    client: Callable[[], OIDCClient | None] | None = None,
) -> Identity:
    """For the authorization server at a refresh: the member re-mapped from fresh ``claims`` when it
    has them, else checked as it stands (active, and mapped to a role) and, for a member from the
    identity provider, vouched for by the provider (``client``: the provider's client, asked again
    with the person's sealed refresh token; see "Vouching" above). SignInRefused otherwise: the
    caller refuses the refresh and revokes the grant."""
    if claims is not None:
        signed = await sign_in_member(gw, claims)
        if signed.member.name != name:
            raise _refused("account_mismatch", "These claims are another member's.")
        return signed.member
    member = await identities.get_identity(gw.store.db, name)
    if member is None:
        raise _refused("member_removed", "This member no longer exists.")
    if member.status != "active":
        raise _refused(f"member_{member.status}", f"Your membership is {member.status}.")
    if member.source == "oidc" and member.role == "guest" and not member.role_pinned:
        raise _refused("no_role", "None of your groups gives you a role in this organization any more.")
    if member.source != "oidc":
        return member
    return await _vouched_for(gw, member, client() if client is not None else None)


async def _vouched_for(gw: Gateway, member: Identity, client: OIDCClient | None) -> Identity:
    """The member as the provider says now, or as it stands while the provider's last word is
    recent enough; SignInRefused when the provider refuses the person or has not vouched in time."""
    vouch = await _vouch_of(gw.store, member)
    token = _open_token(gw.store, vouch.refresh_sealed)
    if token is not None and client is not None:
        asked = await _ask(gw, member, client, vouch, token, again=True)
        if asked is not None:
            return asked
    if gw.store.clock() - vouch.vouched_at > gw.settings.oidc_vouch_seconds:
        raise _refused(
            "vouch_expired", "The identity provider has not vouched for you recently; sign in again."
        )
    return member


async def _vouch_of(storage: Storage, member: Identity) -> idp_vouches.Vouch:
    vouch = await idp_vouches.get_vouch(storage.db, member.name)
    if vouch is None or (vouch.issuer, vouch.subject) != (member.issuer, member.subject):
        raise _refused("not_vouched", "The identity provider has not vouched for you here; sign in again.")
    return vouch


async def _ask(
    gw: Gateway, member: Identity, client: OIDCClient, vouch: idp_vouches.Vouch, token: str, *, again: bool
) -> Identity | None:
    """The member re-mapped from what the provider says now; None when it could not be asked."""
    now = gw.store.clock()
    try:
        answer = await client.refresh(token, vouch.subject, gw.settings.oidc_role_claim)
    except SignInRefused as exc:
        if exc.error != "invalid_grant":
            logger.warning("OIDC refresh of %s: the provider cannot vouch now (%s)", member.name, exc.reason)
            return None
        assert vouch.refresh_sealed is not None
        if not await idp_vouches.forget(gw.store.db, member.name, vouch.refresh_sealed) and again:
            newer = await _vouch_of(gw.store, member)  # a sign-in or another replica stored a new token
            newer_token = _open_token(gw.store, newer.refresh_sealed)
            if newer_token is not None:
                return await _ask(gw, member, client, newer, newer_token, again=False)
        raise _refused("provider_refused", "The identity provider no longer vouches for you.") from exc
    rotated = gw.store.box.seal(answer.refresh_token) if answer.refresh_token else None
    remapped = await _remap_fresh(gw, member, answer.claims)  # no role: guest, and refused
    await idp_vouches.vouched(gw.store.db, member.name, read=vouch.refresh_sealed, rotated=rotated, now=now)
    return remapped


def _open_token(storage: Storage, sealed: str | None) -> str | None:
    try:
        token = storage.box.open(sealed)
    except ConfigError:  # sealed under another key: as if the provider had given none
        return None
    return token if isinstance(token, str) and token else None


async def _remap_fresh(gw: Gateway, member: Identity, claims: Mapping[str, Any]) -> Identity:
    """The member re-mapped from the provider's fresh claims (a refresh's ID token or userinfo,
    which need not repeat the e-mail: the one known is kept)."""
    issuer, subject = str(claims.get("iss", "")), claims.get("sub")
    if (issuer, subject) != (member.issuer, member.subject) or not isinstance(subject, str):
        raise _refused("account_mismatch", "The identity provider names someone else.")
    email = _email(claims, gw.settings) if "email" in claims else (member.email or member.name)
    seen = {"email": email, "subject": subject, "issuer": issuer}
    return await _remap(gw.store, member, role_for(claims, gw.settings), seen)


def session_scopes(role: str) -> frozenset[str]:
    """Every scope the role can use: tools only with ``tool:execute``, writes only with a write
    permission, nothing for a role that holds nothing."""
    scopes: set[str] = set()
    if has_permission(role, "tool:execute"):
        return SCOPES
    if any(has_permission(role, p) for p in ("members:read", "audit:read", "usage:read", "connections:read")):
        scopes.add("mcp:read")
    if any(has_permission(role, p) for p in ("members:write", "connections:write", "restrictions:write")):
        scopes |= {"mcp:read", "mcp:write", "mcp:destructive"}
    return frozenset(scopes)


async def mint_session(storage: Storage, member: Identity) -> str:
    """A short-lived sign-in session (8 h) for the signed-in member: its token, given to the
    console's or the sign-in's cookie, never shown; within what the member's role can use."""
    if member.role not in ROLES:
        raise ConfigError(f"member {member.name!r} has an unknown role")
    scopes = session_scopes(member.role) or frozenset({"mcp:read"})
    return await new_session_grant(storage, member.name, scopes)


async def complete_sign_in(
    gw: Gateway, client: OIDCClient, params: Mapping[str, str], pending: Pending | None
) -> tuple[SignedIn, str]:
    """The callback's whole work: ``state`` checked and spent (once, on every replica), the code
    exchanged, the ID token verified, the member found or created, and a session grant minted."""
    code = client.check_state(params, pending)
    assert pending is not None  # check_state refuses a callback without a started sign-in
    from toolcrib.auth.oidc import PENDING_SECONDS

    expires_at = pending.started_at + PENDING_SECONDS
    if not await single_use.claim(
        gw.store.db, "oidc-state:" + pending.state, expires_at=expires_at, now=gw.store.clock()
    ):
        logger.warning("OIDC sign-in refused: invalid_request (state_replayed)")
        raise SignInRefused(
            "invalid_request", "state_replayed", "This sign-in was already completed; start again."
        )
    answer = await client.finish(code, pending)
    signed = await sign_in_member(gw, answer.claims)
    await idp_vouches.put_sign_in(
        gw.store.db,
        member=signed.member.name,
        issuer=str(answer.claims["iss"]),
        subject=str(answer.claims["sub"]),
        refresh_sealed=gw.store.box.seal(answer.refresh_token) if answer.refresh_token else None,
        now=gw.store.clock(),
    )
    token = await mint_session(gw.store, signed.member)
    logger.info("OIDC sign-in of %s (%s)", signed.member.name, signed.member.role)
    return signed, token
