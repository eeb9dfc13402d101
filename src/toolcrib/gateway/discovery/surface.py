"""The model-facing surface: the two meta-tools' definitions (SPEC R-2.2, R-2.3, R-2.5).

Their JSON stays under 4,000 bytes together and never depends on what is connected.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

__all__ = ["SURFACES", "Surface", "meta_input_schemas", "meta_tool_definitions"]

SurfaceName = Literal["search", "capability"]


@dataclass(frozen=True, slots=True)
class Surface:
    """The names a surface gives the two meta-tools and their arguments."""

    search: str
    execute: str
    query_arg: str
    handle_arg: str
    arguments_arg: str


_LIST = {"type": "array"}
SEARCH_OUTPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"results": _LIST, "restricted": _LIST},
    "required": ["results", "restricted"],
}
"""R-3.1's ``{"results": [card...], "restricted": [name...]}`` (plus ``not_connected``, R-5.11)."""

SURFACES: dict[str, Surface] = {
    "search": Surface("search_tools", "execute_tool", "query", "action_id", "arguments"),
    "capability": Surface("discover_capability", "run_capability", "intent", "actionId", "params"),
}

_SEARCH_DESCRIPTION = (
    "Find connected tools by intent (they are not listed), then run one with {execute}. "
    "Returns up to `limit` cards, or none when nothing fits."
)
_EXECUTE_DESCRIPTION = (
    "Run a tool found with {search}, by public name (`account__tool`) or a card's {handle}, its "
    "inputs in `{arguments}`. Errors come back in-band, each with a code."
)


def meta_tool_definitions(surface: str = "search") -> list[dict[str, Any]]:
    """The two ``tools/list`` entries of the meta-tools, as JSON objects."""
    s = SURFACES[surface]
    search_props: dict[str, Any] = {
        s.query_arg: {
            "type": "string",
            "description": "What you want to do.",
        },
        "limit": {"type": "integer", "minimum": 1, "maximum": 5, "default": 3},
    }
    execute_props: dict[str, Any] = {
        s.handle_arg: {"type": "string", "description": "A search card's handle."},
        s.arguments_arg: {"type": "object", "description": "The tool's inputs, by card name."},
    }
    if surface == "search":
        execute_props = {
            "tool": {"type": "string"},  # the description says what it names
            **execute_props,
        }
    fmt = {"search": s.search, "execute": s.execute, "handle": s.handle_arg, "arguments": s.arguments_arg}
    return [
        {
            "name": s.search,
            "description": _SEARCH_DESCRIPTION.format(**fmt),
            "inputSchema": {"type": "object", "properties": search_props, "required": [s.query_arg]},
            "outputSchema": SEARCH_OUTPUT_SCHEMA,
            "annotations": {"readOnlyHint": True},
        },
        {
            "name": s.execute,
            "description": _EXECUTE_DESCRIPTION.format(**fmt),
            "inputSchema": {"type": "object", "properties": execute_props},
        },
    ]


def meta_input_schemas(surface: str = "search") -> dict[str, dict[str, Any]]:
    """Each meta-tool's listed ``inputSchema`` by its name: what its arguments are validated by."""
    return {d["name"]: d["inputSchema"] for d in meta_tool_definitions(surface)}
