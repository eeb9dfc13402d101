"""Steps 9-11 of the execution pipeline: aliases back to provider names, frozen values, required.

Every function takes the exact record (the source of truth), never a card.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

import toolcrib.catalog.bounds as bounds
from toolcrib.catalog._schema import is_open, properties, required, reverse_aliases, type_label
from toolcrib.catalog.records import ExactRecord
from toolcrib.catalog.sanitize import sanitize_text, truncate
from toolcrib.errors import InvalidArguments, NeedsInput

__all__ = ["accepted_names", "check_required", "map_arguments", "merge_frozen"]

_MAX_REPORTED = 10
_NAME_CHARS = 100


def accepted_names(record: ExactRecord, frozen: Collection[str] = ()) -> list[str]:
    """The argument names the model may send: the aliases of fields that are not frozen."""
    return [alias for alias, exact in record.aliases.items() if exact not in frozen]


def map_arguments(
    record: ExactRecord, arguments: Mapping[str, Any], *, frozen: Collection[str] = ()
) -> dict[str, Any]:
    """Map aliases back to exact provider field names (step 9, R-4.4).

    The exact provider name is accepted too (aliases never collide with another field's exact
    name). A frozen field sent by the caller is dropped: its frozen value is merged next
    (R-9.1). An unknown name raises :class:`InvalidArguments` listing the accepted names,
    unless the schema explicitly accepts undeclared names (``additionalProperties``,
    ``patternProperties``), in which case it passes through to validation.
    """
    if not isinstance(arguments, Mapping):
        raise InvalidArguments("arguments must be a JSON object", errors=[_error("", "not an object")])
    exact_names = reverse_aliases(record)
    open_schema = is_open(record.input_schema)
    mapped: dict[str, Any] = {}
    unknown: list[str] = []
    for key, value in arguments.items():
        exact = _exact_name(record, exact_names, key, open_schema=open_schema)
        if exact is None:
            unknown.append(str(key))
            continue
        if exact in mapped:
            alias = exact_names.get(exact, exact)
            raise InvalidArguments(
                f"argument {alias!r} was given twice", errors=[_error(f"/{_escape(alias)}", "given twice")]
            )
        if exact not in frozen:
            mapped[exact] = value
    if unknown:
        errors = [_error(f"/{_escape(truncate(k, _NAME_CHARS))}", "unknown argument") for k in unknown]
        raise InvalidArguments(
            f"unknown argument(s): {', '.join(truncate(k, _NAME_CHARS) for k in unknown[:_MAX_REPORTED])}",
            errors=errors[:_MAX_REPORTED],
            accepted=accepted_names(record, frozen),
        )
    return mapped


def _exact_name(
    record: ExactRecord, exact_names: Mapping[str, str], key: Any, *, open_schema: bool
) -> str | None:
    if not isinstance(key, str):
        return None
    if key in record.aliases:
        return record.aliases[key]
    return key if key in exact_names or open_schema else None


def merge_frozen(arguments: Mapping[str, Any], frozen: Mapping[str, Any]) -> dict[str, Any]:
    """Frozen values over the caller's arguments (step 10, R-9.1): the caller cannot override."""
    return {**arguments, **frozen}


def check_required(record: ExactRecord, arguments: Mapping[str, Any]) -> None:
    """Raise :class:`NeedsInput` for each required field absent from the exact arguments (step 11).

    Each missing field is named by its alias, with its type and a short sanitized description
    taken from the exact schema, so a field the card left out is described too.
    """
    missing = [name for name in required(record.input_schema) if name not in arguments]
    if not missing:
        return
    aliases = reverse_aliases(record)
    props = properties(record.input_schema)
    raise NeedsInput([_missing_entry(aliases.get(name, name), props.get(name)) for name in missing])


def _missing_entry(alias: str, prop: Any) -> dict[str, Any]:
    description = prop.get("description") if isinstance(prop, dict) else None
    return {
        "name": alias,
        "type": type_label(prop),
        "description": sanitize_text(description, bounds.INPUT_DESCRIPTION_CHARS),
    }


def _error(pointer: str, message: str) -> dict[str, str]:
    return {"pointer": pointer, "message": message}


def _escape(name: str) -> str:
    return name.replace("~", "~0").replace("/", "~1")
