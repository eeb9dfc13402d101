"""The organization written as a file (#26), for git: ``toolcrib export``.

Secrets are never written: each one becomes an ``${env:NAME}`` reference with a stable name
derived from where it sits (a connection ``crm``'s header ``Authorization`` is
``CRM_AUTHORIZATION``; its env ``API_KEY`` is ``CRM_API_KEY``; the ``user:password`` of its URL is
``CRM_URL_USERINFO`` and its query's ``api_key`` ``CRM_URL_API_KEY`` (R-13.7); a secret frozen value of
``crm``'s ``create_contact`` ``api_key`` is ``CRM_CREATE_CONTACT_API_KEY``), and the header comment
lists every name the file needs, so the same names can be set where the file is applied.
Applying the export to an empty database, with those variables set, reproduces the organization.
"""

from __future__ import annotations

import re
from typing import Any

import yaml

from toolcrib.gateway.connections.url_secrets import placeholder_url
from toolcrib.gateway.orgfile.state import Current, LiveConnection

__all__ = ["export_text", "secret_name"]


def secret_name(*parts: str) -> str:
    """``crm``, ``Authorization`` -> ``CRM_AUTHORIZATION``."""
    joined = "_".join(re.sub(r"[^A-Za-z0-9]+", "_", p).strip("_").upper() for p in parts if p)
    return re.sub(r"_+", "_", joined if not joined[:1].isdigit() else "_" + joined)


class _Names:
    """The ``${env:NAME}`` references handed out, each name once."""

    def __init__(self) -> None:
        self.names: list[str] = []

    def ref(self, *parts: str) -> str:
        name = secret_name(*parts)
        while name in self.names:
            name += "_"
        self.names.append(name)
        return f"${{env:{name}}}"


def export_text(now: Current) -> str:
    """The YAML of ``now``; secrets as references, listed in the header."""
    refs = _Names()
    org: dict[str, Any] = {
        "connections": [_connection(name, live, refs) for name, live in sorted(now.connections.items())],
        "members": [{"name": m.name, "role": m.role} for m in now.members.values()],
        "restrictions": [
            _without_none(
                {
                    "effect": r.effect,
                    r.target_kind: r.target,
                    "connector": r.connector,
                    "account": r.account,
                    "tool": r.tool,
                }
            )
            for r in now.restrictions
        ],
        "frozen": [
            {
                "account": a,
                "tool": t,
                "parameter": p,
                "value": refs.ref(a, t, p) if secret else value,
                "secret": secret,
            }
            for (a, t, p), (value, secret) in sorted(now.frozen.items())
        ],
        "approvals": [
            _without_none({"risk": r.classification, "account": r.account, "role": r.role})
            for r in now.approvals
        ],
        "limits": [
            _without_none(
                {k: getattr(x, k) for k in ("member", "role", "account", "tool", "per_minute", "per_day")}
            )
            for x in now.limits
        ],
        "classifications": [
            {"account": a, "tool": t, "risk": risk} for (a, t), risk in sorted(now.classifications.items())
        ],
    }
    if now.catalog_allow:
        org["catalog"] = {"allow": list(now.catalog_allow)}
    header = [
        "# toolcrib organization file, written by `toolcrib export` (#26).",
        "# Check it with `toolcrib plan -f FILE`, apply it with `toolcrib apply -f FILE`.",
        "# JSON Schema: docs/toolcrib.schema.json",
    ]
    if refs.names:
        header.append("# Secrets are not exported. Set these variables where the file is applied:")
        header += [f"#   {n}" for n in refs.names]
    body = yaml.safe_dump(org, sort_keys=False, allow_unicode=True, default_flow_style=False, width=100)
    return "\n".join(header) + "\n" + body


def _registry_connection(name: str, live: LiveConnection, refs: _Names) -> dict[str, Any]:
    """A connection added from a registry keeps its reference (R-13.9); its inputs are written as
    placeholders, like every secret-bearing value."""
    row = live.row
    item: dict[str, Any] = {"name": name, "connector": row.connector, "from_registry": live.from_registry}
    if live.registry_inputs:
        item["inputs"] = {k: refs.ref(name, k) for k in live.registry_inputs}
    if row.pinning != "accept":
        item["pinning"] = row.pinning
    return item


def _connection(name: str, live: LiveConnection, refs: _Names) -> dict[str, Any]:
    row = live.row
    if live.from_registry is not None:
        return _registry_connection(name, live, refs)
    item: dict[str, Any] = {"name": name, "connector": row.connector}
    if row.transport == "stdio":
        item["command"] = list(row.command or [])
    else:
        item["url"] = placeholder_url(live.url or row.url or "", lambda part: refs.ref(name, part))
    if live.env:
        item["env"] = {k: refs.ref(name, k) for k in live.env}
    if live.headers:
        item["headers"] = {k: refs.ref(name, k) for k in live.headers}
    if row.auth is not None:
        sealed = live.oauth or {}
        oauth: dict[str, Any] = {k: v for k, v in sealed.items() if k in ("client_id", "scope") and v}
        if sealed.get("client_secret"):
            oauth["client_secret"] = refs.ref(name, "client_secret")
        if row.auth == "oauth_member":
            oauth["per_member"] = True
        item["oauth"] = oauth or True
    if row.pinning != "accept":
        item["pinning"] = row.pinning
    return item


def _without_none(values: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in values.items() if v is not None}
