"""The numbers of R-4.2, R-4.5 and R-5.9 in one place, so tests and benches cite the same values."""

from __future__ import annotations

from typing import Final

__all__ = [
    "CARD_DESCRIPTION_CHARS",
    "INPUT_DESCRIPTION_CHARS",
    "MAX_CARD_BYTES",
    "MAX_CATALOG_BYTES",
    "MAX_CATALOG_TOOLS",
    "MAX_ENUM_VALUES",
    "MAX_PROJECTED_INPUTS",
    "MAX_PROSE_CHARS",
    "MAX_SCHEMA_BYTES",
    "MAX_SCHEMA_DEPTH",
    "MAX_TOOL_NAME_CHARS",
    "MAX_VALUE_CHARS",
    "SEARCH_CARD_BYTES",
    "SEARCH_MAX_CARDS",
    "SEARCH_RESPONSE_BYTES",
]

MAX_CATALOG_BYTES: Final = 16 * 1024 * 1024
"""A connection's whole catalog (R-4.2)."""
MAX_CATALOG_TOOLS: Final = 5_000
"""Tools in one connection's catalog (R-4.2)."""
MAX_SCHEMA_BYTES: Final = 256 * 1024
"""One raw input schema, as canonical JSON (R-4.2)."""
MAX_SCHEMA_DEPTH: Final = 32
"""Nesting of one raw input schema, counted in JSON containers (objects and arrays) (R-4.2)."""
MAX_PROSE_CHARS: Final = 4_000
"""Provider prose kept before any further shortening (R-4.2)."""
MAX_TOOL_NAME_CHARS: Final = 128
"""An upstream tool name (the MCP specification's recommended bound)."""
MAX_PROJECTED_INPUTS: Final = 32
"""Parameters projected on a card (R-4.2, R-4.5)."""
MAX_CARD_BYTES: Final = 8 * 1024
"""A stored card, as compact JSON (R-4.2)."""
CARD_DESCRIPTION_CHARS: Final = 300
"""A card's description (R-4.5)."""
INPUT_DESCRIPTION_CHARS: Final = 80
"""An input's short description: 92% of the real catalogs' parameter descriptions fit whole."""
MAX_ENUM_VALUES: Final = 8
"""Enum values shown for one input (R-4.5)."""
MAX_VALUE_CHARS: Final = 40
"""An enum value or default shown on a card; longer strings are left out whole."""
SEARCH_CARD_BYTES: Final = 1_800
"""One card in a search response (R-5.9)."""
SEARCH_RESPONSE_BYTES: Final = 6_000
"""A whole search response (R-5.9)."""
SEARCH_MAX_CARDS: Final = 5
"""Cards in a search response (R-5.9)."""
