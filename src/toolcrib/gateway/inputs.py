"""Input validation of the meta-tools and control-plane operations, once, by their declared schema.

The MCP face, the REST face and the command line all call :func:`validate_input` with the very
``inputSchema`` that ``tools/list`` shows (SPEC R-10.2), before any handler runs. A wrong type is an
in-band ``invalid_arguments`` whose errors carry a JSON pointer each (R-3.3). Messages are written
here from the failed keyword; they never echo the caller's value, which may be megabytes long.
"""

from __future__ import annotations

import functools
import itertools
import json
from collections.abc import Mapping
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import ValidationError

from toolcrib.errors import InvalidArguments

__all__ = ["MAX_ERRORS", "validate_input"]

MAX_ERRORS = 10
"""Errors reported by one ``invalid_arguments`` answer."""


def validate_input(schema: Mapping[str, Any], arguments: object) -> dict[str, Any]:
    """``arguments`` as a dict when it satisfies ``schema``; else raise :class:`InvalidArguments`."""
    if not isinstance(arguments, Mapping):
        raise InvalidArguments(
            "the arguments must be a JSON object", [{"pointer": "", "message": "must be an object"}]
        )
    instance = dict(arguments)
    _require_text(instance)
    errors = list(itertools.islice(_validator(_key(schema)).iter_errors(instance), MAX_ERRORS))
    if errors:
        described = [_describe(e) for e in errors]
        pointers = ", ".join(d["pointer"] or "/" for d in described)
        raise InvalidArguments(f"invalid arguments at {pointers}", described)
    return instance


def _require_text(instance: dict[str, Any]) -> None:
    """Every string is Unicode text a store can write: JSON's ``\\ud800`` escape, or an argv byte
    decoded with surrogateescape, gives a lone surrogate that no UTF-8 encoder accepts."""
    try:
        json.dumps(instance, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidArguments(
            "the arguments hold text that is not valid Unicode",
            [{"pointer": "", "message": "has a lone surrogate"}],
        ) from exc
    except (RecursionError, ValueError) as exc:
        raise InvalidArguments(
            "the arguments nest too deeply", [{"pointer": "", "message": "nests too deeply"}]
        ) from exc


def _key(schema: Mapping[str, Any]) -> str:
    return json.dumps(schema, sort_keys=True, separators=(",", ":"))


@functools.lru_cache(maxsize=256)
def _validator(canonical: str) -> Draft202012Validator:
    """One compiled validator per schema; the schemas are the gateway's own, a few dozen in all."""
    schema = json.loads(canonical)
    Draft202012Validator.check_schema(schema)
    return Draft202012Validator(schema)


def _pointer(parts: list[str]) -> str:
    return "".join("/" + p.replace("~", "~0").replace("/", "~1") for p in parts)


def _describe(error: ValidationError) -> dict[str, str]:
    parts = [str(p) for p in error.absolute_path]
    keyword, expected = str(error.validator), error.validator_value
    if keyword == "required":
        present = error.instance if isinstance(error.instance, dict) else {}
        names = expected if isinstance(expected, list) else []
        missing = next((str(r) for r in names if r not in present), "")
        return {"pointer": _pointer([*parts, missing]), "message": "required"}
    if keyword == "additionalProperties":
        return {"pointer": _pointer(parts), "message": "has an unknown property"}
    messages = {
        "type": f"must be of type {_words(expected)}",
        "enum": f"must be one of {_words(expected)}",
        "minimum": f"must be at least {expected}",
        "maximum": f"must be at most {expected}",
        "minLength": f"must have at least {expected} character(s)",
        "maxLength": f"must have at most {expected} characters",
    }
    return {"pointer": _pointer(parts), "message": messages.get(keyword, f"fails the {keyword} rule")}


def _words(value: Any) -> str:
    if isinstance(value, list | tuple):
        return " or ".join(str(v) for v in value)
    return str(value)
