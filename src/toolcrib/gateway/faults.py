"""What every face answers for an exception: one in-band error, never a message from Python or SQL.

The MCP face, the REST face and the command line all call :func:`in_band`. Errors toolcrib raised
on purpose keep their code (SPEC R-3.3); a database that stayed locked is ``store_busy``; anything
else (a StoreError, a bug) is ``internal_error`` carrying a random incident id, and the traceback is
logged under that id, on the server only.
"""

from __future__ import annotations

import logging
import secrets

from toolcrib.errors import (
    CatalogError,
    ConfigError,
    InBandError,
    InternalError,
    InvalidArguments,
)

__all__ = ["in_band"]

logger = logging.getLogger("toolcrib.incidents")
logger.addHandler(logging.NullHandler())  # a library logs; the process that serves decides where


def in_band(exc: BaseException) -> InBandError:
    """The in-band error a face answers for ``exc``; unexpected ones are logged with an incident id."""
    if isinstance(exc, InBandError):  # StoreBusy included: its payload has a fixed message
        return exc
    if isinstance(exc, ConfigError | CatalogError):  # our own words about the caller's input
        return InvalidArguments(exc.message)
    incident = secrets.token_hex(8)
    logger.error("internal error, incident %s", incident, exc_info=exc)
    return InternalError(incident)
