"""A restriction rule: its shape, its validation and what it matches (SPEC R-8.1, R-8.3).

A rule names at most one connector kind, one account and one tool; each field that is set
narrows what the rule covers, and a field left empty covers everything.

Blocks and allows match differently (R-8.3):

- a **block** matches a connector kind (case-insensitively: every account of it), an account, or
  tools by a case-sensitive ``fnmatch`` glob (``delete_*``) inside what it names; a block with only
  a tool glob applies in every account; a block naming nothing blocks everything.
- an **allow** matches one exact account, and inside it all tools or one exact tool name; never a
  pattern. So an allow that names a tool must name its account, and an allow may name a connector
  only next to an account (then both must match). A connector alone on an allow is refused: it
  would silently cover accounts of that kind created later, which is the widening by accident
  R-8.3 rules out. An allow naming nothing is valid and, by R-8.2, denies everything.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Literal

from toolcrib.errors import ConfigError
from toolcrib.policy.roles import require_role

__all__ = ["Rule", "describe_rule", "validate_rule"]

_ACCOUNT = re.compile(r"^[a-z0-9][a-z0-9-]{0,39}$")
_GLOB_CHARS = frozenset("*?[]")


@dataclass(frozen=True, slots=True)
class Rule:
    """One restriction (R-8.1), as stored in the ``restrictions`` table."""

    id: str
    effect: Literal["allow", "block"]
    target_kind: Literal["role", "user"]
    target: str
    connector: str | None = None
    account: str | None = None
    tool: str | None = None

    def matches(self, *, connector: str, account: str, tool: str | None) -> bool:
        """Whether the rule covers ``tool`` of ``account`` (``tool=None``: the connection whole).

        For a block and ``tool=None`` this means "blocks the connection whole"; for an allow it
        means "allows at least one tool of the connection".
        """
        if self.connector is not None and self.connector.casefold() != connector.casefold():
            return False
        if self.account is not None and self.account != account:
            return False
        if self.effect == "allow":
            return self.account is not None and (tool is None or self.tool in (None, tool))
        if self.tool is None:
            return True
        if tool is None:
            return _covers_every_name(self.tool)
        return fnmatchcase(tool, self.tool)


def _covers_every_name(glob: str) -> bool:
    return set(glob) == {"*"}


def validate_rule(rule: Rule) -> None:
    """Refuse a rule that cannot mean what its author wants (ConfigError)."""
    if rule.effect not in ("allow", "block"):
        raise ConfigError(f"rule {rule.id}: effect must be allow or block, not {rule.effect!r}")
    if rule.target_kind == "role":
        require_role(rule.target)
    elif rule.target_kind != "user":
        raise ConfigError(f"rule {rule.id}: target kind must be role or user, not {rule.target_kind!r}")
    if not rule.target:
        raise ConfigError(f"rule {rule.id}: the target is empty")
    if rule.account is not None and not _ACCOUNT.match(rule.account):
        raise ConfigError(f"rule {rule.id}: {rule.account!r} is not an account label")
    for name, value in (("connector", rule.connector), ("tool", rule.tool)):
        if value is not None and not value.strip():
            raise ConfigError(f"rule {rule.id}: the {name} is empty")
    if rule.effect == "allow":
        _validate_allow(rule)


def _validate_allow(rule: Rule) -> None:
    if rule.tool is not None and _GLOB_CHARS & set(rule.tool):
        raise ConfigError(f"rule {rule.id}: an allow names exact tools only, not the pattern {rule.tool!r}")
    if rule.account is None and (rule.tool is not None or rule.connector is not None):
        raise ConfigError(
            f"rule {rule.id}: an allow names an exact account; connectors and tools only narrow it"
        )


def describe_rule(rule: Rule) -> str:
    """The rule in words: ``role member blocks account notion-legal tools delete_*``."""
    verb = "allows" if rule.effect == "allow" else "blocks"
    parts: list[str] = []
    if rule.connector is not None:
        parts.append(f"connector {rule.connector}")
    if rule.account is not None:
        parts.append(f"account {rule.account}")
    if rule.tool is not None:
        plural = rule.effect == "block" and bool(_GLOB_CHARS & set(rule.tool))
        parts.append(f"{'tools' if plural else 'tool'} {rule.tool}")
    if not parts:
        parts.append("nothing" if rule.effect == "allow" else "everything")
    return f"{rule.target_kind} {rule.target} {verb} {' '.join(parts)}"
