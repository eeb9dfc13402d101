"""Prompt and resource results as the caller receives them: redacted, capped, URIs through the
gateway (R-16.2, R-16.3, R-12). Pure.

Redaction is the connection's (its secrets and its secret frozen values, R-9.2, and credential
shapes, R-12.2); the caps are R-12.1's. A text is cut like a tool result's text. A blob is binary
in base64: one over the string cap is never cut into a fragment that would decode to a partial
file; it is left out whole, and a text entry of the same URI says so. Whatever was cut sets
``toolcrib_truncated: true`` in the result's ``_meta`` (and the entry's).

A ``resource_link`` or an embedded resource in a tool result, and each entry of a read, carry the
gateway URI of their resource (the original kept in ``_meta``), so the client reads them through
the gateway under the same gates.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from toolcrib.gateway.calls.shaping import (
    TRUNCATED_KEY,
    Caps,
    cap_block,
    cap_text,
    redact_block,
    redact_value,
)
from toolcrib.gateway.resources.naming import ORIGINAL_URI, gateway_uri

__all__ = ["rewrite_links", "shape_contents", "shape_prompt"]


def shape_prompt(
    raw: Mapping[str, Any], account: str, secrets: Sequence[str], caps: Caps = Caps()
) -> dict[str, Any]:
    """A ``prompts/get`` result of ``account``, redacted then capped, its messages' resources
    named by gateway URIs."""
    out, cut = _shaped(raw, "messages", secrets, caps, lambda m: _message(m, account, secrets, caps))
    if isinstance(out.get("description"), str):
        out["description"], description_cut = cap_text(out["description"], caps)
        cut = cut or description_cut
    return _marked(out) if cut else out


def shape_contents(
    raw: Mapping[str, Any], account: str, secrets: Sequence[str], caps: Caps = Caps()
) -> dict[str, Any]:
    """A ``resources/read`` result of ``account``: each entry redacted, capped, and named by its
    gateway URI."""
    out, cut = _shaped(raw, "contents", secrets, caps, lambda e: _entry(e, account, secrets, caps))
    return _marked(out) if cut else out


def _shaped(
    raw: Mapping[str, Any],
    key: str,
    secrets: Sequence[str],
    caps: Caps,
    one: Callable[[Mapping[str, Any]], tuple[dict[str, Any], bool]],
) -> tuple[dict[str, Any], bool]:
    """``raw`` redacted, its list ``key`` kept to the first ``caps.max_items`` entries, each shaped
    by ``one`` (an entry that is not an object is left out); and whether anything was cut."""
    out = {k: redact_value(v, secrets) for k, v in raw.items() if k != key}
    items = raw.get(key)
    cut = False
    if isinstance(items, list):
        cut = len(items) > caps.max_items
        shaped: list[Any] = []
        for item in items[: caps.max_items]:
            if isinstance(item, Mapping):
                new, item_cut = one(item)
                shaped.append(new)
                cut = cut or item_cut
        out[key] = shaped
    return out, cut


def _message(
    message: Mapping[str, Any], account: str, secrets: Sequence[str], caps: Caps
) -> tuple[dict[str, Any], bool]:
    block, cut = cap_block(redact_block(message.get("content"), secrets), caps)
    (block,) = rewrite_links({"content": [block]}, account)["content"]
    rest = {k: v for k, v in message.items() if k != "content"}
    return {**redact_value(rest, secrets), "content": block}, cut


def _entry(
    entry: Mapping[str, Any], account: str, secrets: Sequence[str], caps: Caps
) -> tuple[dict[str, Any], bool]:
    blob = entry.get("blob")
    new = {k: v if k == "blob" else redact_value(v, secrets) for k, v in entry.items()}
    cut = False
    if isinstance(new.get("text"), str):
        new["text"], cut = cap_text(new["text"], caps)
    if isinstance(blob, str) and len(blob) > caps.max_string:
        new.pop("blob")
        new["mimeType"] = "text/plain"
        new["text"] = (
            f"{TRUNCATED_KEY}: true. This binary content ({len(blob)} characters of base64, of type "
            f"{entry.get('mimeType') or 'unknown'}) is over the cap of {caps.max_string} characters "
            "and was left out whole."
        )
        cut = True
    original = new.get("uri")  # redacted like the rest: a URI can hold a secret too
    if isinstance(original, str):
        new = _through_gateway(new, account, original)
    return (_marked(new) if cut else new), cut


def _marked(out: dict[str, Any]) -> dict[str, Any]:
    out["_meta"] = {**(out.get("_meta") or {}), TRUNCATED_KEY: True}
    return out


def _through_gateway(item: Mapping[str, Any], account: str, original: str) -> dict[str, Any]:
    meta = {**(item.get("_meta") or {}), ORIGINAL_URI: original}
    return {**item, "uri": gateway_uri(account, original), "_meta": meta}


def rewrite_links(result: Mapping[str, Any], account: str) -> dict[str, Any]:
    """A tool result whose ``resource_link`` blocks and embedded resources carry gateway URIs, and
    whose MCP Apps view (``_meta.ui.resourceUri``, or the older ``_meta["ui/resourceUri"]``), when
    the upstream named one on the result, is the gateway's ``ui://`` URI of it."""
    result = _view_through_gateway(result, account)
    content = result.get("content")
    if not isinstance(content, list):
        return dict(result)
    blocks: list[Any] = []
    for block in content:
        if isinstance(block, Mapping) and block.get("type") == "resource_link":
            uri = block.get("uri")
            block = _through_gateway(block, account, uri) if isinstance(uri, str) else block
        elif isinstance(block, Mapping) and block.get("type") == "resource":
            resource = block.get("resource")
            if isinstance(resource, Mapping) and isinstance(resource.get("uri"), str):
                block = {**block, "resource": _through_gateway(resource, account, resource["uri"])}
        blocks.append(block)
    return {**result, "content": blocks}


def _view_through_gateway(result: Mapping[str, Any], account: str) -> Mapping[str, Any]:
    meta = result.get("_meta")
    if not isinstance(meta, Mapping):
        return result
    new = dict(meta)
    ui = meta.get("ui")
    if isinstance(ui, Mapping) and isinstance(ui.get("resourceUri"), str):
        new["ui"] = {**ui, "resourceUri": gateway_uri(account, ui["resourceUri"])}
    if isinstance(meta.get("ui/resourceUri"), str):
        new["ui/resourceUri"] = gateway_uri(account, meta["ui/resourceUri"])
    return {**result, "_meta": new}
