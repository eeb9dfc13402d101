"""Grant scopes and the scope each classification needs (SPEC R-7.3).

Scopes are flat, not a ladder: a `destructive` tool needs `mcp:destructive` and nothing else
implies it (`mcp:destructive` does not imply `mcp:write`, nor `mcp:write` imply `mcp:read`).
Reaching any connected tool also needs `mcp:tools`; control-plane operations do not.
"""

from __future__ import annotations

import re
from typing import Literal, get_args

from toolcrib.errors import ConfigError, Forbidden

__all__ = ["RISKS", "SCOPES", "TOOLS_SCOPE", "Risk", "parse_scopes", "scope_for"]

Risk = Literal["read", "write", "destructive", "forbidden"]
RISKS: tuple[Risk, ...] = get_args(Risk)

TOOLS_SCOPE = "mcp:tools"
_BY_RISK: dict[str, str] = {"read": "mcp:read", "write": "mcp:write", "destructive": "mcp:destructive"}
SCOPES: frozenset[str] = frozenset({*_BY_RISK.values(), TOOLS_SCOPE})

_SEPARATORS = re.compile(r"[\s,]+")


def scope_for(risk: str) -> str:
    """The scope a classification needs. ``forbidden`` has none: it raises Forbidden."""
    if risk == "forbidden":
        raise Forbidden("a forbidden tool is reachable under no scope")
    try:
        return _BY_RISK[risk]
    except KeyError:
        raise ConfigError(f"unknown classification {risk!r}") from None


def parse_scopes(text: str, *, strict: bool = True) -> frozenset[str]:
    """Parse an OAuth-style scope string (space- or comma-separated) into a set of scopes.

    ``strict`` (the default, for personal access tokens chosen by a person) refuses an unknown
    scope with ConfigError. ``strict=False`` drops scopes that are not toolcrib's, as an OAuth
    issuer's token may also carry ``openid``, ``profile`` and the like.
    """
    found = frozenset(s for s in _SEPARATORS.split(text) if s)
    unknown = found - SCOPES
    if unknown and strict:
        raise ConfigError(
            f"unknown scope(s) {', '.join(sorted(unknown))}; scopes are {', '.join(sorted(SCOPES))}"
        )
    return found & SCOPES
