"""The organization file's shape (#26): one pydantic model per section, ``extra="forbid"``.

These models say what a file may hold (types, required fields, the fixed vocabularies); the JSON
Schema published at ``docs/toolcrib.schema.json`` is generated from them (:func:`json_schema`), so
an editor completes exactly what ``toolcrib apply`` accepts. The rules an object must follow beyond
its shape (a connection's definition, a restriction's allow/block rules, a limit's counts) are
*not* restated here: :mod:`toolcrib.gateway.orgfile.checks` runs the gateway's own validators
(``check_definition``, ``validate_rule``, ``validate_approval_rule``, ``validate_limit``) over each
object, so the file, the REST API, MCP and the command line refuse the same things.

Identity provider role mappings are settings (``TOOLCRIB_OIDC_ROLE_MAP``), not stored objects, so
they are not part of the file; the pinning policy is a connection's ``pinning``; classification
overrides are the ``classifications`` section.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from toolcrib.catalog.pins import MODES
from toolcrib.gateway.connections.definition import NAME
from toolcrib.policy.approvals import APPROVABLE
from toolcrib.policy.roles import ROLES
from toolcrib.policy.scopes import RISKS

__all__ = [
    "ApprovalSpec",
    "CatalogSpec",
    "ClassificationSpec",
    "ConnectionSpec",
    "FrozenSpec",
    "LimitSpec",
    "MemberSpec",
    "OAuthSpec",
    "OrgFile",
    "RestrictionSpec",
    "json_schema",
]

Role = Literal[ROLES]  # type: ignore[valid-type]
Approvable = Literal[APPROVABLE]  # type: ignore[valid-type]
Risk = Literal[RISKS]  # type: ignore[valid-type]
Pinning = Literal[MODES]  # type: ignore[valid-type]
SECRET_NOTE = "May be `${env:NAME}` or `${file:/path}`: resolved at apply time and sealed (R-13.3)."


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


class OAuthSpec(_Strict):
    """OAuth 2.1 at the upstream (#14): a hand-registered client, the scope, or per member."""

    client_id: str | None = None
    client_secret: str | None = Field(None, description=SECRET_NOTE)
    scope: str | None = None
    per_member: bool = False


class ConnectionSpec(_Strict):
    """A connection (R-13): a stdio ``command``, a Streamable HTTP ``url``, or a registry entry
    ``from_registry`` with its ``inputs`` (R-13.9)."""

    name: str = Field(pattern=NAME.pattern, description="A unique lowercase label, e.g. `notion-legal`.")
    connector: str | None = Field(
        None, description="The kind's human label, e.g. `Notion` (required unless from_registry)."
    )
    from_registry: str | None = Field(
        None, description="A registry entry `SERVER@VERSION`, e.g. `io.github.example/time@2026.10.19`."
    )
    inputs: dict[str, str] = Field(
        default_factory=dict, description="The inputs the registry entry asks for. " + SECRET_NOTE
    )
    command: str | list[str] | None = Field(None, description="The stdio server's command line.")
    url: str | None = Field(None, description="The Streamable HTTP server's URL.")
    env: dict[str, str] = Field(
        default_factory=dict, description="Environment of a stdio server. " + SECRET_NOTE
    )
    headers: dict[str, str] = Field(default_factory=dict, description="HTTP headers. " + SECRET_NOTE)
    oauth: bool | OAuthSpec | None = Field(None, description="Authorize at the upstream with OAuth 2.1.")
    pinning: Pinning = Field("accept", description="What a sync does with a tool new to it (R-13.4).")


class CatalogSpec(_Strict):
    """Which registry entries may be added (R-13.9): server-name patterns; empty allows all."""

    allow: list[str] = Field(default_factory=list, description="Patterns such as `io.github.acme/*`.")


class MemberSpec(_Strict):
    """A member of the organization and their role (R-7.1)."""

    name: str
    role: Role


class RestrictionSpec(_Strict):
    """A restriction rule (R-8.1): for a ``role`` or a ``user``, what it allows or blocks."""

    effect: Literal["allow", "block"]
    role: Role | None = None
    user: str | None = None
    connector: str | None = None
    account: str | None = Field(None, pattern=NAME.pattern)
    tool: str | None = Field(None, description="An exact tool, or a glob on a block (`delete_*`).")


class FrozenSpec(_Strict):
    """A frozen parameter (R-9.1): ``value`` is merged over every call of the tool."""

    account: str = Field(pattern=NAME.pattern)
    tool: str
    parameter: str
    value: Any = Field(description="A JSON value. " + SECRET_NOTE)
    secret: bool | None = Field(
        None, description="Sealed and never read back (R-9.2); by default when the name says credential."
    )


class ApprovalSpec(_Strict):
    """Calls of a classification (optionally of one account, one role) need an approval (#14)."""

    risk: Approvable
    account: str | None = Field(None, pattern=NAME.pattern)
    role: Role | None = None


class LimitSpec(_Strict):
    """A rate limit (R-7.10) for a member, a role or everyone, optionally on one account or tool."""

    member: str | None = None
    role: Role | None = None
    account: str | None = Field(None, pattern=NAME.pattern)
    tool: str | None = None
    per_minute: int | None = None
    per_day: int | None = None


class ClassificationSpec(_Strict):
    """An admin override of a tool's classification; ``forbidden`` hides it everywhere (R-7.4)."""

    account: str = Field(pattern=NAME.pattern)
    tool: str
    risk: Risk


class OrgFile(_Strict):
    """A whole organization, as ``toolcrib plan`` / ``apply`` read it and ``export`` writes it."""

    model_config = ConfigDict(
        extra="forbid",
        strict=True,
        frozen=True,
        title="toolcrib organization",
        json_schema_extra={"$schema": "https://json-schema.org/draft/2020-12/schema"},
    )

    connections: list[ConnectionSpec] = Field(default_factory=list)
    members: list[MemberSpec] = Field(default_factory=list)
    restrictions: list[RestrictionSpec] = Field(default_factory=list)
    frozen: list[FrozenSpec] = Field(default_factory=list)
    approvals: list[ApprovalSpec] = Field(default_factory=list)
    limits: list[LimitSpec] = Field(default_factory=list)
    classifications: list[ClassificationSpec] = Field(default_factory=list)
    catalog: CatalogSpec | None = None


def json_schema() -> dict[str, Any]:
    """The JSON Schema of :class:`OrgFile` (``docs/toolcrib.schema.json``)."""
    return OrgFile.model_json_schema()
