"""Frozen parameters of one tool (SPEC R-9.1): which provider fields an admin pinned, and to what.

Only the lookup lives here; removing frozen keys from cards and merging the values over the
caller's arguments belong to the catalog.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

__all__ = ["frozen_for"]


def frozen_for(frozen_rows: Iterable[Mapping[str, Any]], account: str, tool: str) -> dict[str, Any]:
    """``{provider field: value}`` for ``tool`` of ``account`` from rows of the ``frozen`` table
    (keys ``account``, ``tool``, ``param``, ``value``)."""
    return {
        row["param"]: row["value"] for row in frozen_rows if row["account"] == account and row["tool"] == tool
    }
