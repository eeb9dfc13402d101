"""A short list of words that name the same thing in tool catalogs.

Kept small on purpose: each group is a pair of everyday synonyms that tool authors use
interchangeably (a "folder" tool is called ``list_directory``). A query term matches a tool
through a synonym exactly as through itself; its weight is the IDF of everything it matched.
"""

from __future__ import annotations

from functools import cache

__all__ = ["synonyms"]

_GROUPS = (
    ("folder", "directory", "dir"),
    ("repo", "repository"),
    ("picture", "image", "photo"),
    ("doc", "document"),
    ("spreadsheet", "sheet", "workbook"),
    ("presentation", "slideshow", "deck"),
    ("pr", "pull"),
)


@cache
def _table() -> dict[str, tuple[str, ...]]:
    table: dict[str, tuple[str, ...]] = {}
    for group in _GROUPS:
        for word in group:
            table[word] = tuple(other for other in group if other != word)
    return table


def synonyms(term: str) -> tuple[str, ...]:
    """Other words that stand for ``term`` (stemmed forms), possibly none."""
    return _table().get(term, ())
