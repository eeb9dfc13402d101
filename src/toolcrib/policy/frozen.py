"""Frozen parameters of one tool (SPEC R-9.1, R-9.2): which provider fields an admin pinned, to
what, and which of those values are secret.

Only the lookup and the rules live here (pure: the unsealing is passed in); removing frozen keys
from cards and merging the values over the caller's arguments belong to the catalog.

A secret frozen value (R-9.2) is one the admin marked so, or, by default, one whose parameter name
says credential: one of its words (``name_words``: ``x-api-key`` is ``x``, ``api``, ``key``;
``clientSecret`` is ``client``, ``secret``) is in :data:`CREDENTIAL_WORDS`. So ``api_key``,
``apiKey``, ``access_token``, ``client_secret``, ``password``, ``Authorization``, ``session_id``
and ``sort_key`` are secret by default; ``keyword``, ``monkey`` and ``tokens_used`` are not (a
word is matched whole). An explicit choice wins: ``--no-secret`` (``"secret": false``) keeps a
``sort_key`` readable. A secret value is sealed at rest, never read back, and redacted by value
from results and free text like the connection's own secrets (:func:`secret_strings`).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from toolcrib.policy.classify import name_words

__all__ = [
    "ACTIVE",
    "CREDENTIAL_WORDS",
    "NO_PARAMETER",
    "SECRET_SHOWN",
    "WAITING",
    "FrozenValues",
    "frozen_for",
    "frozen_status",
    "frozen_view",
    "is_secret",
    "load_frozen",
    "says_credential",
    "secret_strings",
    "unmet_frozen",
]

CREDENTIAL_WORDS = frozenset(
    {
        "key",
        "apikey",
        "token",
        "accesstoken",
        "refreshtoken",
        "authtoken",
        "idtoken",
        "jwt",
        "bearer",
        "secret",
        "clientsecret",
        "password",
        "passwd",
        "pwd",
        "passphrase",
        "authorization",
        "auth",
        "credential",
        "credentials",
        "privatekey",
        "cookie",
        "session",
        "signature",
        "sig",
    }
)
"""Words that make a parameter's value secret by default (R-9.2)."""

SECRET_SHOWN = "secret, set"
"""What every read shows in place of a secret value."""


ACTIVE = "active"
"""A frozen value whose tool is listed and declares the parameter: merged over every call."""

WAITING = "waiting for the tool"
"""Policy naming a tool its connection has not listed (yet): stored, enforced from the first sync
that brings the tool (R-13.8)."""

NO_PARAMETER = "held: the tool has no such parameter"
"""A frozen value whose tool appeared without the parameter: the tool does not run (it never runs
without a frozen value declared for it, R-13.8) until an admin unfreezes or fixes the value."""


def unmet_frozen(input_schema: Mapping[str, Any], params: Iterable[str]) -> list[str]:
    """The frozen ``params`` the tool's input schema does not declare (fail closed, R-13.8): a tool
    that appeared without a parameter frozen for it would take the value as an unknown argument,
    or drop it, and run unconstrained; it is held instead."""
    declared = input_schema.get("properties")
    names = declared if isinstance(declared, Mapping) else {}
    return sorted(p for p in params if p not in names)


def frozen_status(input_schema: Mapping[str, Any] | None, param: str) -> str:
    """What a frozen value does now: :data:`WAITING` when its tool is not listed (``None``),
    :data:`NO_PARAMETER` when the tool lacks the parameter, else :data:`ACTIVE`."""
    if input_schema is None:
        return WAITING
    return NO_PARAMETER if unmet_frozen(input_schema, [param]) else ACTIVE


def says_credential(param: str) -> bool:
    """Whether the parameter's name says credential: one of its words is a credential word."""
    return any(word in CREDENTIAL_WORDS for word in name_words(param))


def is_secret(param: str, asked: bool | None) -> bool:
    """The admin's explicit choice, else the default by the parameter's name."""
    return says_credential(param) if asked is None else asked


def secret_strings(value: Any) -> list[str]:
    """The texts by which a secret value is redacted: a string itself; for anything else its JSON
    text and every string and number inside it (an upstream may echo any of them)."""
    if isinstance(value, str):
        return [value]
    found = [json.dumps(value, ensure_ascii=False, separators=(",", ":"))]
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            found.append(item)
        elif isinstance(item, int | float) and not isinstance(item, bool):
            found.append(str(item))
        elif isinstance(item, Mapping):
            stack.extend(item.values())
        elif isinstance(item, list | tuple):
            stack.extend(item)
    return found


@dataclass(frozen=True, slots=True)
class FrozenValues:
    """Every frozen value, secret ones unsealed (in memory only), as a policy snapshot holds them."""

    values: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    """``(account, tool) -> {provider field: value}``."""
    secret_params: dict[tuple[str, str], frozenset[str]] = field(default_factory=dict)
    """``(account, tool) -> the fields whose value is secret``."""
    secrets: dict[str, tuple[str, ...]] = field(default_factory=dict)
    """``account -> the texts of its secret values``, redacted like the connection's own secrets."""


def load_frozen(rows: Iterable[Mapping[str, Any]], unseal: Callable[[str], Any]) -> FrozenValues:
    """The frozen values of ``rows`` (the ``frozen`` table), each secret one unsealed once."""
    out = FrozenValues()
    for row in rows:
        where = (row["account"], row["tool"])
        secret = bool(row.get("secret"))
        value = unseal(row["sealed"]) if secret else row["value"]
        out.values.setdefault(where, {})[row["param"]] = value
        if secret:
            out.secret_params[where] = out.secret_params.get(where, frozenset()) | {row["param"]}
            texts = out.secrets.get(row["account"], ())
            out.secrets[row["account"]] = (*texts, *secret_strings(value))
    return out


def frozen_view(row: Mapping[str, Any]) -> dict[str, Any]:
    """How every face shows a frozen value: a secret one has no ``value``, only ``"secret": true``
    and ``"set": true`` (tables print :data:`SECRET_SHOWN` in its place)."""
    view = {"account": row["account"], "tool": row["tool"], "param": row["param"]}
    if row.get("secret"):
        return {**view, "secret": True, "set": True}
    return {**view, "secret": False, "value": row["value"]}


def frozen_for(frozen_rows: Iterable[Mapping[str, Any]], account: str, tool: str) -> dict[str, Any]:
    """``{provider field: value}`` for ``tool`` of ``account`` from rows of the ``frozen`` table
    (keys ``account``, ``tool``, ``param``, ``value``)."""
    return {
        row["param"]: row["value"] for row in frozen_rows if row["account"] == account and row["tool"] == tool
    }
