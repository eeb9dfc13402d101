"""toolcrib: one MCP endpoint for a whole organization."""
