"""What the index is built from: one connected tool as search reads it (SPEC section 5).

Its own module because both channels read it: the index (words and names) and the meaning
channel (``semantic.doc_text``, the text a tool is embedded from), and the index imports the
meaning channel. Kept here, neither imports the other back.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["SearchDoc"]


@dataclass(frozen=True, slots=True)
class SearchDoc:
    public_name: str  # "{account}__{tool}"
    account: str  # e.g. "notion-legal"
    connector: str  # connector label, e.g. "Notion"
    name: str  # provider tool name, e.g. "create_page"
    description: str  # provider description (already sanitized/bounded by the catalog)
