"""Why an HTTP upstream could not be reached, in words (#32, finding 10).

A session that fails to start ends with whatever the HTTP and MCP libraries raised, often several
task groups deep: ``ConnectError('All connection attempts failed')``, an ``MCPError('Not Found')``
the SDK made of a 404. Those are translated here, at the boundary, into the cause a person can act
on: ``name not resolved``, ``connection refused``, ``TLS failure (...)``, ``HTTP 404``,
``timeout``, or the upstream's own error. The caller redacts the text (R-13.3).
"""

from __future__ import annotations

import socket
import ssl
from collections.abc import Iterator

import httpx2
from mcp.shared.exceptions import MCPError
from mcp_types.jsonrpc import CONNECTION_CLOSED

__all__ = ["NAME_NOT_RESOLVED", "REFUSED", "TIMEOUT", "http_cause"]

NAME_NOT_RESOLVED = "name not resolved"
REFUSED = "connection refused"
TIMEOUT = "timeout"
_SDK_STAND_INS = frozenset({"Not Found", "Session terminated", "Server returned an error response"})
"""What the SDK says for an HTTP error status without a JSON-RPC error in its body: the status says
more."""
_MAX_SAID = 300


def _all(exc: BaseException | None) -> Iterator[BaseException]:
    """``exc``, the members of every group in it, and every cause and context, each once."""
    seen: set[int] = set()
    pending = [exc] if exc is not None else []
    while pending:
        item = pending.pop()
        if id(item) in seen:
            continue
        seen.add(id(item))
        yield item
        if isinstance(item, BaseExceptionGroup):
            pending.extend(item.exceptions)
        pending.extend(e for e in (item.__cause__, item.__context__) if e is not None)


def _tls(exc: ssl.SSLError) -> str:
    why = exc.reason or exc.strerror or type(exc).__name__
    return f"TLS failure ({str(why).lower().replace('_', ' ')})"


def http_cause(exc: BaseException | None, status: int | None) -> str | None:
    """The cause of a failed start of an HTTP session, or None when nothing in ``exc`` names one.

    ``status`` is the error status an answer to one of the session's POSTs carried, if any.
    """
    found = list(_all(exc))
    tls = next((e for e in found if isinstance(e, ssl.SSLError)), None)
    if tls is not None:
        return _tls(tls)
    for kind, named in ((socket.gaierror, NAME_NOT_RESOLVED), (ConnectionRefusedError, REFUSED)):
        if any(isinstance(e, kind) for e in found):
            return named
    upstream = next((e for e in found if isinstance(e, MCPError) and e.code != CONNECTION_CLOSED), None)
    said = None if upstream is None or upstream.message in _SDK_STAND_INS else upstream.message[:_MAX_SAID]
    if status is not None:
        return f"HTTP {status}" + (f": {said}" if said else "")
    if any(isinstance(e, httpx2.TimeoutException | TimeoutError) for e in found):
        return TIMEOUT
    if said is not None:
        return f"the server answered: {said}"
    return None
