"""An operation's arguments, checked by its declared ``inputSchema`` (R-10.2).

The command line checks a command's arguments before it opens anything, by the schema the MCP and
REST faces use. This module imports the operation table and the validator only, not the control
plane's handlers (and through them the MCP SDK and the search engine): a one-shot command that
checks its input loads what it uses (#33).
"""

from __future__ import annotations

from typing import Any

from toolcrib.gateway.inputs import validate_input
from toolcrib.operations import input_schema, spec

__all__ = ["check_operation_input"]


def check_operation_input(resource: str, operation: str, arguments: object) -> dict[str, Any]:
    """Validate ``arguments`` by the operation's declared ``inputSchema`` (the CLI's entry)."""
    return validate_input(input_schema(spec(resource, operation).arguments), arguments)
