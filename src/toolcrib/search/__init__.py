"""Which tools match: tokenizer, lexical scorer, typo matcher, optional vectors, index. Pure.

The gateway builds one :class:`SearchIndex`, keeps it current with ``replace_account`` /
``remove_account``, and calls ``search`` with the caller's visibility (SPEC section 5).
"""

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from toolcrib.search.documents import SearchDoc
    from toolcrib.search.index import Hit, SearchIndex, SearchResult
    from toolcrib.search.options import SEED_RULES, SearchOptions

_HOMES = {
    "Hit": "index",
    "SEED_RULES": "options",
    "SearchDoc": "documents",
    "SearchIndex": "index",
    "SearchOptions": "options",
    "SearchResult": "index",
}
"""Each name's module, imported at the first use of the name: a module that needs one small part
(``search.documents``) does not load the index and numpy with it (a one-shot command, #33)."""

__all__ = ["SEED_RULES", "Hit", "SearchDoc", "SearchIndex", "SearchOptions", "SearchResult"]


def __getattr__(name: str) -> Any:
    """Import ``name``'s module at its first use (PEP 562)."""
    if name not in _HOMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{_HOMES[name]}"), name)
