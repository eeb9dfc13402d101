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

from toolcrib.catalog.arguments import accepted_names, check_required, map_arguments, merge_frozen
from toolcrib.catalog.budget import compact_json, fit_search_response, json_size, shrink_card
from toolcrib.catalog.cards import build_card, card_is_complete
from toolcrib.catalog.normalize import normalize_catalog, normalize_tool
from toolcrib.catalog.records import ExactRecord, canonical_json, schema_hash
from toolcrib.catalog.sanitize import sanitize_text
from toolcrib.catalog.validation import validate_arguments

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
