"""The secrets a connection's URL carries (R-13.7): its userinfo, and every query value whose name
says credential (the words of frozen values, R-9.2: ``api_key``, ``token``, ``sig``nature…).

They are credentials (R-13.3): the whole URL is sealed with the connection's other credentials,
and ``connections.url`` holds its :func:`public_url` (``https://***@host/mcp?api_key=***``), which
is what every face shows. The URL that is connected to is :func:`connect_url`: the sealed one, or,
on a row stored before URLs were sealed, the stored one (both shapes are read; no new write stores
a secret in clear). Export writes :func:`placeholder_url`: ``${env:…}`` in each secret's place.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import SplitResult, unquote, urlsplit, urlunsplit

from toolcrib.policy.frozen import says_credential

__all__ = [
    "HIDDEN",
    "connect_url",
    "has_secrets",
    "placeholder_url",
    "public_url",
    "sealed_url",
    "url_secret_values",
]

HIDDEN = "***"
"""What a URL shows in place of each of its secrets."""


def _parts(url: str) -> tuple[SplitResult, str | None, list[tuple[str, str | None]]]:
    """The split URL, its userinfo (or None), and its query as raw ``(name, value)`` pairs."""
    parts = urlsplit(url)
    userinfo = parts.netloc.rpartition("@")[0] if "@" in parts.netloc else None
    pairs: list[tuple[str, str | None]] = []
    for item in parts.query.split("&") if parts.query else []:
        name, eq, value = item.partition("=")
        pairs.append((name, value if eq else None))
    return parts, userinfo, pairs


def _secret_query(name: str, value: str | None) -> bool:
    return bool(value) and says_credential(unquote(name).replace("+", " "))


def _rebuilt(url: str, userinfo: Callable[[str], str], value: Callable[[str, str], str]) -> str:
    parts, info, pairs = _parts(url)
    netloc = parts.netloc if info is None else f"{userinfo(info)}@{parts.netloc.rpartition('@')[2]}"
    query = "&".join(
        name if v is None else f"{name}={value(name, v) if _secret_query(name, v) else v}"
        for name, v in pairs
    )
    return urlunsplit(parts._replace(netloc=netloc, query=query))


def has_secrets(url: str) -> bool:
    _, info, pairs = _parts(url)
    return info is not None or any(_secret_query(n, v) for n, v in pairs)


def public_url(url: str) -> str:
    """``url`` with each of its secrets shown as ``***`` (idempotent; a URL without one unchanged)."""
    if not has_secrets(url):
        return url
    return _rebuilt(url, lambda _: HIDDEN, lambda _n, _v: HIDDEN)


def placeholder_url(url: str, ref: Callable[[str], str]) -> str:
    """``url`` with each secret replaced by ``ref(part)``: ``url_userinfo`` for ``user:password``,
    ``url_<name>`` for a query value (export's ``${env:…}`` references)."""
    if not has_secrets(url):
        return url
    return _rebuilt(url, lambda _: ref("url_userinfo"), lambda name, _v: ref("url_" + unquote(name)))


def url_secret_values(url: str | None) -> list[str]:
    """The texts by which ``url``'s secrets are redacted from free text: the userinfo, its password,
    and each credential query value, as written and decoded. Not the user name alone: it is often an
    ordinary word (``support``), which would be blanked all over results."""
    if not url:
        return []
    _, info, pairs = _parts(url)
    raw = [v for n, v in pairs if v and _secret_query(n, v)]
    if info is not None:
        raw += [info, info.partition(":")[2]]
    return list(dict.fromkeys(t for v in raw if v for t in (v, unquote(v))))


def sealed_url(url: str | None) -> dict[str, str]:
    """What a connection seals of ``url`` beside its env and headers: the URL itself, when it
    carries a secret."""
    return {"url": url} if url is not None and has_secrets(url) else {}


def connect_url(stored: str | None, sealed: Mapping[str, Any]) -> str | None:
    """The URL to connect to: the sealed one, else the stored one (a row stored before URLs were
    sealed holds its URL whole in ``connections.url``)."""
    url = sealed.get("url")
    return url if isinstance(url, str) and url else stored
