"""How dangerous a tool or an operation is: `read`, `write`, `destructive` or `forbidden` (R-7.4).

A connected tool's classification is the most dangerous of the signals it gives:

(a) its MCP annotations, **only the keys actually present**: ``readOnlyHint: true`` says read,
    ``readOnlyHint: false`` says write, ``destructiveHint: true`` says destructive (also when
    ``readOnlyHint`` is true: a contradiction resolves to the more dangerous reading).
    MCP's defaults (``readOnlyHint`` false, ``destructiveHint`` true) are **not** applied to
    missing keys: 64 of the 115 tools in the real catalogs carry no annotations, and applying
    the defaults would make every one of them destructive (``get_issue`` included), which would
    teach admins to hand out ``mcp:destructive`` to everyone.
(b) the verbs of its name, split on ``_``, ``-``, ``.``, spaces, digits and camelCase: a
    destructive verb **anywhere** in the name says destructive (over-rating is the safe error);
    otherwise the **first** word that is a known verb decides read or write. "First known verb"
    rather than "leading word" because real names carry prefixes (``git_log``,
    ``slack_list_channels``, ``brave_web_search``, ``maps_search_places``); rather than "any
    word" because ``create_search_index`` must not read as read.
(c) with no signal at all: write.

An admin override (``read``/``write``/``destructive``/``forbidden``) replaces all of this.

Measured on the 14 real catalogs in ``shared/data/catalogs`` (115 tools; the test
``test_r7_4_real_catalog_summary`` keeps these figures true):

| rule (b) variant       | read | write | destructive |
|------------------------|------|-------|-------------|
| first known verb (ours)|   58 |    49 |           8 |
| leading word only      |   50 |    57 |           8 |
| annotations only, MCP defaults for missing keys | 32 | 12 | 71 |

The leading-word variant misses 8 prefixed readers (``slack_get_users``, ``brave_web_search``,
``maps_search_places``, ...), which would then need ``mcp:write``.

Control-plane operations (:func:`classify_operation`): list/get/search/read/explain/diagnose
are read; create/update/set/invite/refresh/update_role are write; delete/remove/revoke/suspend/
unset are destructive. ``suspend`` because it cuts a member off at once, like revoke; ``unset``
(of a frozen parameter) because it removes a safety control and widens what the model may pass.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, get_args

from toolcrib.errors import ConfigError
from toolcrib.policy.scopes import RISKS, Risk

__all__ = [
    "DESTRUCTIVE_VERBS",
    "READ_VERBS",
    "WRITE_VERBS",
    "annotation_signals",
    "classify",
    "classify_operation",
    "name_words",
    "verb_signal",
]


def _verbs(text: str) -> frozenset[str]:
    return frozenset(text.split())


DESTRUCTIVE_VERBS: frozenset[str] = _verbs(
    "delete del remove rm destroy drop purge erase revoke wipe truncate clear reset kill terminate "
    "unlink overwrite flush expunge uninstall deprovision shred discard obliterate"
)
READ_VERBS: frozenset[str] = _verbs(
    "get list read search find fetch query describe show view count check lookup look retrieve "
    "inspect browse download preview peek stat exists"
)
WRITE_VERBS: frozenset[str] = _verbs(
    "create update set add post send write edit put patch push insert move rename copy upload fork "
    "merge commit checkout make new save store apply assign invite replace upsert submit reply "
    "publish enable disable toggle start stop run execute trigger import sync click fill "
    "navigate evaluate"
)

_ORDER: dict[str, int] = {"read": 0, "write": 1, "destructive": 2, "forbidden": 3}
_WORDS = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+")

_OPERATIONS: dict[str, Risk] = {
    **dict.fromkeys(
        ("list", "get", "search", "read", "explain", "diagnose", "changes", "examples", "show", "updates"),
        "read",
    ),
    **dict.fromkeys(
        ("create", "update", "set", "invite", "refresh", "update_role", "accept", "reject", "upgrade"),
        "write",
    ),
    **dict.fromkeys(("delete", "remove", "revoke", "suspend", "unset", "forget"), "destructive"),
}


def name_words(name: str) -> list[str]:
    """Lower-cased words of a tool name: ``getIssue-v2_list`` -> ``["get", "issue", "v", "list"]``."""
    return [w.lower() for w in _WORDS.findall(name)]


def _most_dangerous(signals: list[Risk]) -> Risk:
    return max(signals, key=_ORDER.__getitem__) if signals else "write"


def annotation_signals(annotations: Mapping[str, Any]) -> list[Risk]:
    """The classifications the annotations that are present claim (rule (a))."""
    found: list[Risk] = []
    read_only = annotations.get("readOnlyHint")
    if read_only is True:
        found.append("read")
    elif read_only is False:
        found.append("write")
    if annotations.get("destructiveHint") is True:
        found.append("destructive")
    return found


def verb_signal(name: str) -> Risk | None:
    """The classification the verbs of a tool name claim (rule (b)), or None."""
    words = name_words(name)
    if any(w in DESTRUCTIVE_VERBS for w in words):
        return "destructive"
    for word in words:
        if word in READ_VERBS:
            return "read"
        if word in WRITE_VERBS:
            return "write"
    return None


def _check_risk(value: str) -> Risk:
    for risk in RISKS:
        if value == risk:
            return risk
    raise ConfigError(f"unknown classification {value!r}; use one of {', '.join(get_args(Risk))}")


def classify(tool_name: str, annotations: Mapping[str, Any] | None, override: str | None = None) -> Risk:
    """The classification of a connected tool (R-7.4); ``override`` (admin's) wins."""
    if override is not None:
        return _check_risk(override)
    signals = annotation_signals(annotations or {})
    verb = verb_signal(tool_name)
    if verb is not None:
        signals.append(verb)
    return _most_dangerous(signals)


def classify_operation(operation: str) -> Risk:
    """The classification of a control-plane operation such as ``update_role`` (R-7.3).

    Operations outside the table fall back to the verbs of their name, then to write.
    """
    known = _OPERATIONS.get(operation)
    if known is not None:
        return known
    verb = verb_signal(operation)
    return verb if verb is not None else "write"
