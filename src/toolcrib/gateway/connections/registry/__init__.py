"""The connector catalog (R-13.9): MCP registries read over the API v0.1, and a registry entry
added as a connection in one step.

- :mod:`.fetch`: one bounded GET through the address policy, and the cache of answers (with
  their age);
- :mod:`.finding`: search, show, and the newest version of an entry across the registries;
- :mod:`.adding`: a checked entry -> a URL or stdio connection, its secrets sealed; updates.
"""
