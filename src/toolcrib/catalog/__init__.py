"""What tools exist: upstream definition -> exact record + card. Pure: no I/O, no clock.

```
normalize   tools/list entries -> ExactRecord, within R-4.2's limits      (R-4.1 .. R-4.4)
sanitize    provider prose -> text safe for a card                       (R-4.7)
cards       ExactRecord -> stored card                                   (R-4.5, R-4.6, R-4.8)
budget      cards -> a search response within its byte budget            (R-5.9)
arguments   execution steps 9-11: aliases, frozen values, required       (SPEC section 6)
validation  execution step 12: the complete JSON Schema                  (SPEC section 6)
```
"""

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from toolcrib.catalog.arguments import accepted_names, check_required, map_arguments, merge_frozen
    from toolcrib.catalog.budget import compact_json, fit_search_response, json_size, shrink_card
    from toolcrib.catalog.cards import build_card, card_is_complete
    from toolcrib.catalog.normalize import normalize_catalog, normalize_tool
    from toolcrib.catalog.records import ExactRecord, canonical_json, schema_hash
    from toolcrib.catalog.sanitize import sanitize_text
    from toolcrib.catalog.validation import validate_arguments

_HOMES = {
    "ExactRecord": "records",
    "accepted_names": "arguments",
    "build_card": "cards",
    "canonical_json": "records",
    "card_is_complete": "cards",
    "check_required": "arguments",
    "compact_json": "budget",
    "fit_search_response": "budget",
    "json_size": "budget",
    "map_arguments": "arguments",
    "merge_frozen": "arguments",
    "normalize_catalog": "normalize",
    "normalize_tool": "normalize",
    "sanitize_text": "sanitize",
    "schema_hash": "records",
    "shrink_card": "budget",
    "validate_arguments": "validation",
}
"""Each name's module, imported at the first use of the name: a module that needs one part
(``catalog.pins``, ``catalog.records``) does not load jsonschema with it (a one-shot command, #33)."""

__all__ = [
    "ExactRecord",
    "accepted_names",
    "build_card",
    "canonical_json",
    "card_is_complete",
    "check_required",
    "compact_json",
    "fit_search_response",
    "json_size",
    "map_arguments",
    "merge_frozen",
    "normalize_catalog",
    "normalize_tool",
    "sanitize_text",
    "schema_hash",
    "shrink_card",
    "validate_arguments",
]


def __getattr__(name: str) -> Any:
    """Import ``name``'s module at its first use (PEP 562)."""
    if name not in _HOMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{_HOMES[name]}"), name)
