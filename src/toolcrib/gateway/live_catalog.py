"""The live catalog: the connections and exact tool records this process serves from memory.

The request path reads connections and tools here, never from the connections table (R-15.2:
another process's change arrives through the follower). Its state changes in one place each way:
``install`` (a connection's row and usable tools, with their flat-listing sizes) and ``forget``;
``connections.catalogs`` orders those changes and keeps the search index beside them.

It also holds what this process learned about reaching each connection: the upstream spec of a
connection without OAuth (kept until its definition changes, #12) and the upstream OAuth tokens it
has seen lately (redacted like the connection's other secrets, R-13.3).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

import anyio

from toolcrib.store.connections import ConnectionRow, StoredTool

if TYPE_CHECKING:
    from toolcrib.upstream.spec import UpstreamSpec

__all__ = ["KNOWN_TOKENS_KEPT", "LiveCatalog", "SpecKey"]

SpecKey = tuple[str, tuple[str, ...], str | None, str | None]
"""What a held upstream spec was built from: transport, command, URL and the sealed secrets."""

KNOWN_TOKENS_KEPT = 6
"""How many upstream OAuth tokens of one (connection, member) this process remembers for redaction."""


class LiveCatalog:
    """Connections by account, their usable tools by name, and what a flat listing of them weighs."""

    def __init__(self) -> None:
        self.connections: dict[str, ConnectionRow] = {}
        self.tools: dict[str, dict[str, StoredTool]] = {}
        """Account -> tool name -> the exact record (tools refused at sync are not here)."""
        self.listing_bytes: dict[str, int] = {}
        """Public name -> the bytes of its entry in a flat ``tools/list``."""
        self.installing = anyio.Lock()
        """Catalogs are installed and forgotten one at a time, in call order (``connections.catalogs``)."""
        self.syncing_now: Counter[str] = Counter()
        """Connections this process is syncing now: the follower leaves them to that sync."""
        self.specs: dict[str, tuple[SpecKey, UpstreamSpec]] = {}
        self.known_tokens: dict[tuple[str, str], list[str]] = {}
        """(account, member) -> the upstream OAuth tokens seen lately, newest last."""

    def lookup(self, public_name: str) -> tuple[ConnectionRow, StoredTool] | None:
        """The connection and exact record behind a public name ``{account}__{tool}``."""
        account, sep, tool = public_name.partition("__")
        row = self.connections.get(account)
        if not sep or row is None:
            return None
        stored = self.tools.get(account, {}).get(tool)
        return (row, stored) if stored is not None else None

    def install(self, row: ConnectionRow, usable: dict[str, StoredTool], listing: dict[str, int]) -> set[str]:
        """Make ``usable`` the tools of ``row``; the public names it had and no longer has."""
        self.connections[row.name] = row
        old = self.tools.get(row.name, {})
        for gone in old.values():
            self.listing_bytes.pop(gone.record.public_name, None)
        self.tools[row.name] = usable
        self.listing_bytes.update(listing)
        return {s.record.public_name for s in old.values()} - set(listing)

    def forget(self, name: str) -> list[str]:
        """Take connection ``name`` out; the public names of the tools it had."""
        self.connections.pop(name, None)
        self.specs.pop(name, None)
        gone = [s.record.public_name for s in self.tools.pop(name, {}).values()]
        for public_name in gone:
            self.listing_bytes.pop(public_name, None)
        return gone

    def remember_tokens(self, account: str, member: str, tokens: Iterable[str]) -> list[str]:
        """Add upstream tokens seen for ``(account, member)``; the live list of them (newest last)."""
        known = self.known_tokens.setdefault((account, member), [])
        for token in tokens:
            if token and token not in known:
                known.append(token)
        del known[:-KNOWN_TOKENS_KEPT]
        return known

    def flat_listing_bytes(self, visible: Callable[[str], bool] | None = None) -> int:
        """What a flat ``tools/list`` of the active connected tools ``visible`` keeps would weigh."""
        return sum(
            self.listing_bytes.get(s.record.public_name, 0)
            for account, tools in self.tools.items()
            if (row := self.connections.get(account)) is not None and row.status == "active"
            for s in tools.values()
            if visible is None or visible(s.record.public_name)
        )
