"""Personal access tokens and other random identifiers (R-5.10, R-7.5)."""

from __future__ import annotations

import base64
import secrets

__all__ = [
    "new_approval_id",
    "new_grant_id",
    "new_handle",
    "new_instance_id",
    "new_result_id",
    "new_rule_id",
    "new_token",
]

TOKEN_PREFIX = "tcp_"


def new_token() -> str:
    """A personal access token: 256 random bits, shown once, stored only as a hash."""
    return TOKEN_PREFIX + secrets.token_urlsafe(32)


def _base32(n_bytes: int, length: int) -> str:
    return base64.b32encode(secrets.token_bytes(n_bytes)).decode().lower()[:length]


def new_handle() -> str:
    """An action handle: ``act_`` + 26 random base32 characters (130 bits)."""
    return "act_" + _base32(17, 26)


def new_grant_id() -> str:
    return "grt_" + _base32(10, 16)


def new_rule_id() -> str:
    return "rul_" + _base32(10, 12)


def new_instance_id() -> str:
    return "ins_" + _base32(10, 16)


def new_result_id() -> str:
    return "res_" + _base32(17, 26)


def new_approval_id() -> str:
    """An approval id: unguessable, since its link is what an approver opens (#14)."""
    return "apr_" + _base32(16, 26)
