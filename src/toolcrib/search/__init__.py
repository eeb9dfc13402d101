"""Which tools match: tokenizer, lexical scorer, typo matcher, optional vectors, index. Pure.

The gateway builds one :class:`SearchIndex`, keeps it current with ``replace_account`` /
``remove_account``, and calls ``search`` with the caller's visibility (SPEC section 5).
"""

from toolcrib.search.documents import SearchDoc
from toolcrib.search.index import Hit, SearchIndex, SearchResult
from toolcrib.search.options import SEED_RULES, SearchOptions

__all__ = ["SEED_RULES", "Hit", "SearchDoc", "SearchIndex", "SearchOptions", "SearchResult"]
