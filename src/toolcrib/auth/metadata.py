"""How a client learns to authenticate: RFC 9728 metadata and RFC 6750 challenges (SPEC R-2.4).

``protected_resource_metadata`` is the JSON served at ``resource_metadata_url(resource_url)``
(``/.well-known/oauth-protected-resource``, plus the resource's path when it has one, RFC 9728
section 3.1). ``www_authenticate`` builds the ``WWW-Authenticate`` header of a 401 (no or invalid
token) or a 403 (``error="insufficient_scope"`` with the ``scope`` needed), pointing at it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any
from urllib.parse import urlsplit, urlunsplit

__all__ = [
    "WELL_KNOWN_PATH",
    "protected_resource_metadata",
    "resource_metadata_url",
    "www_authenticate",
]

WELL_KNOWN_PATH = "/.well-known/oauth-protected-resource"

# RFC 6750 section 3: error, error_description and scope values use these characters only.
_NOT_QUOTABLE = re.compile(r"[^\x20\x21\x23-\x5b\x5d-\x7e]")


def protected_resource_metadata(
    resource_url: str,
    authorization_servers: Sequence[str],
    scopes: Sequence[str],
    *,
    resource_name: str | None = "toolcrib",
) -> dict[str, Any]:
    """The RFC 9728 protected-resource metadata document of this gateway."""
    document: dict[str, Any] = {
        "resource": resource_url,
        "authorization_servers": list(authorization_servers),
        "scopes_supported": list(scopes),
        "bearer_methods_supported": ["header"],
    }
    if resource_name:
        document["resource_name"] = resource_name
    return document


def resource_metadata_url(resource_url: str) -> str:
    """Where the metadata of ``resource_url`` lives: the well-known path, then the resource path."""
    parts = urlsplit(resource_url)
    path = parts.path.rstrip("/")
    return urlunsplit((parts.scheme, parts.netloc, WELL_KNOWN_PATH + path, "", ""))


def www_authenticate(
    resource_metadata_url: str,
    *,
    error: str | None = None,
    scope: str | None = None,
    description: str | None = None,
) -> str:
    """A ``Bearer`` challenge naming the metadata URL, and the error when a token was presented.

    Without a token, RFC 6750 section 3.1 asks for no ``error``; an invalid one gets
    ``error="invalid_token"`` (401), a token short of a scope ``error="insufficient_scope"`` and
    ``scope`` (403). Characters a quoted value may not hold are dropped.
    """
    params = [("error", error), ("error_description", description), ("scope", scope)]
    params.append(("resource_metadata", resource_metadata_url))
    rendered = ", ".join(f'{name}="{_quotable(value)}"' for name, value in params if value)
    return f"Bearer {rendered}"


def _quotable(value: str) -> str:
    return _NOT_QUOTABLE.sub("", value)
