"""Byte budgets of cards and search responses (R-4.2, R-5.9).

Sizes are those of compact JSON (no spaces) in UTF-8. Whatever would cross a budget is left
out whole, never cut mid-JSON, in this order: input descriptions (optional inputs' first), then
optional inputs, then enum values and defaults, then required inputs, then the card. A card that
lost anything says ``complete: false``.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import toolcrib.catalog.bounds as bounds

__all__ = ["compact_json", "fit_search_response", "json_size", "shrink_card"]

_NAMES_SHARE = 1_200
"""Bytes the ``restricted`` and ``not_connected`` names may take before cards are placed."""


def compact_json(value: Any) -> str:
    """The serialization every budget here is measured in."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def json_size(value: Any) -> int:
    """Bytes of ``value`` as compact UTF-8 JSON."""
    return len(compact_json(value).encode("utf-8"))


def shrink_card(card: dict[str, Any], max_bytes: int) -> dict[str, Any] | None:
    """The card within ``max_bytes``, shrunk field by field, or ``None`` when it cannot fit.

    The input card is never modified; a shrunk copy has ``complete: false``.
    """
    if json_size(card) <= max_bytes:
        return card
    shrunk = copy.deepcopy(card)
    shrunk["complete"] = False
    for _ in _shrink_steps(shrunk):
        if json_size(shrunk) <= max_bytes:
            return shrunk
    return None


def _shrink_steps(card: dict[str, Any]) -> Iterator[None]:
    """Remove one field or input at a time, in budget order, yielding after each removal."""
    inputs: list[dict[str, Any]] = card.get("inputs", [])
    yield
    for wanted in (False, True):
        for entry in reversed(inputs):
            if entry.get("required") is wanted and entry.pop("description", None) is not None:
                yield
    for entry in reversed(list(inputs)):
        if not entry.get("required"):
            inputs.remove(entry)
            yield
    for entry in reversed(inputs):
        if entry.pop("enum", None) is not None or entry.pop("default", None) is not None:
            yield
    while inputs:
        inputs.pop()
        yield


def fit_search_response(
    cards: Sequence[dict[str, Any]],
    *,
    restricted: Sequence[str],
    not_connected: Sequence[str] | None = None,
    flags: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """``{"results", "restricted"[, "not_connected"]}`` within R-5.9's budgets.

    At most 5 cards, each at most 1,800 bytes, the whole at most 6,000 bytes. Names in
    ``restricted`` and ``not_connected`` may first take up to 1,200 bytes; cards are placed
    next, in rank order; then more names fill whatever room is left. ``flags`` (such as
    ``query_truncated``) are part of the response and count against its budget.
    """
    response: dict[str, Any] = {"results": [], "restricted": [], **(flags or {})}
    if not_connected is not None:
        response["not_connected"] = []
    _add_names(response, restricted, not_connected, budget=_NAMES_SHARE)
    for card in cards[: bounds.SEARCH_MAX_CARDS]:
        room = bounds.SEARCH_RESPONSE_BYTES - json_size(response) - (1 if response["results"] else 0)
        fitted = shrink_card(card, min(bounds.SEARCH_CARD_BYTES, room))
        if fitted is not None:
            response["results"].append(fitted)
    _add_names(response, restricted, not_connected, budget=bounds.SEARCH_RESPONSE_BYTES)
    return response


def _add_names(
    response: dict[str, Any],
    restricted: Sequence[str],
    not_connected: Sequence[str] | None,
    *,
    budget: int,
) -> None:
    """Append names, whole, in order, while the response stays within ``budget`` bytes."""
    for key, names in (("not_connected", not_connected or ()), ("restricted", restricted)):
        if key not in response:
            continue
        listed: list[str] = response[key]
        for name in names[len(listed) :]:
            listed.append(name)
            if json_size(response) > budget:
                listed.pop()
                break
