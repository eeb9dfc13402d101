"""Aliases of top-level parameters (R-4.4): safe names for the model, mapped back privately."""

from __future__ import annotations

import re
from collections.abc import Iterable

__all__ = ["ALIAS_PATTERN", "build_aliases"]

ALIAS_PATTERN = re.compile(r"[a-z][a-z0-9_]{0,39}")
"""A provider name that matches this, whole, is kept as its own alias."""


def build_aliases(names: Iterable[str]) -> dict[str, str]:
    """Map each alias to its exact provider name, in schema order (R-4.4).

    A name matching :data:`ALIAS_PATTERN` keeps itself; every other name becomes
    ``param_01``, ``param_02``, … in order, skipping any alias already taken, so that a real
    field literally named ``param_01`` keeps its name and never collides.
    """
    ordered = list(dict.fromkeys(names))
    kept = {name for name in ordered if ALIAS_PATTERN.fullmatch(name)}
    aliases: dict[str, str] = {}
    counter = 0
    for name in ordered:
        if name in kept:
            aliases[name] = name
            continue
        counter += 1
        while _numbered(counter) in kept:
            counter += 1
        aliases[_numbered(counter)] = name
    return aliases


def _numbered(n: int) -> str:
    return f"param_{n:02d}"
