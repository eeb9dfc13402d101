"""Result shaping: redaction, then size caps (SPEC R-12.1, R-12.2; section 6 step 16).

Pure: no I/O, no clock. ``shape_result`` takes an upstream ``tools/call`` result and returns what
the model may read, plus the redacted but uncut result to store when something was cut (R-12.3).

Redaction (R-12.2) replaces with ``[REDACTED]``:

- the connection's own secret values, as exact substrings. Values shorter than
  ``MIN_SECRET_LENGTH`` (6) characters are skipped: redacting ``"admin"`` or ``"1234"`` would blank
  ordinary words and numbers all over a result, and such short values are not worth hiding;
- credential-shaped substrings: ``Bearer <token>``, JWTs, PEM private-key blocks, AWS access key
  ids, GitHub, Slack, Stripe, OpenAI/Anthropic and Google API keys, and the value of an assignment
  to a credential-named key (``password=…``, ``"api_key": "…"``, ``aws_secret_access_key=…``);
- in structured data, the string value of an object key named like a credential (``password``,
  ``client_secret``, ``api_key``, ``access_token``, ``authorization``, …); bare ``token`` is not
  one (page tokens are not secrets).

Strings everywhere are redacted, object keys included. Binary payloads (``data`` of image and
audio blocks, ``blob`` of embedded resources) are left alone: a pattern match inside base64 would
only corrupt them.

Caps (R-12.1): strings over 32,000 characters are cut, arrays over 200 items and objects over 200
keys keep their first ones, and a container nested deeper than 8 levels (the root being level 1)
becomes the string ``DEPTH_MARKER``. The caps apply to ``structuredContent`` and to every text block
whose text parses as a JSON object or array (capped as JSON, and re-serialized only when cut);
other text blocks are cut at 32,000 characters. The ``content`` list itself keeps at most 200 blocks.

When anything was cut, the model sees it in both views: ``structuredContent`` (when an object)
gets ``"toolcrib_truncated": true``, so does every JSON-object text block that was itself cut, and
a short notice text block is appended to ``content``. ``attach_result_id`` later adds the stored
result's id (R-12.3) to both places.

Every walk is iterative, so a 5 MB string, a 10,000-item array or a 10,000-level nesting neither
recurses nor slows to a crawl.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = [
    "DEPTH_MARKER",
    "MIN_SECRET_LENGTH",
    "REDACTED",
    "RESULT_ID_KEY",
    "TRUNCATED_KEY",
    "Caps",
    "Shaped",
    "attach_result_id",
    "cap_block",
    "cap_text",
    "cap_value",
    "redact_block",
    "redact_text",
    "redact_value",
    "shape_result",
]

REDACTED = "[REDACTED]"
MIN_SECRET_LENGTH = 6
TRUNCATED_KEY = "toolcrib_truncated"
RESULT_ID_KEY = "toolcrib_result_id"
DEPTH_MARKER = "[toolcrib_truncated: nested too deep]"
_NOTICE = "toolcrib_truncated: true. This result was cut to fit the output limits"


@dataclass(frozen=True, slots=True)
class Caps:
    """The output limits of R-12.1."""

    max_string: int = 32_000
    max_items: int = 200
    max_keys: int = 200
    max_depth: int = 8


# --- redaction -------------------------------------------------------------------------------

# Credential shapes. Each starts with a literal, so that ``re`` can skip through megabytes of text
# at memchr speed; the word boundary in front is checked by ``_redact_shape`` instead of a leading
# ``\b``, which would defeat that search (about 90 ms instead of 3 ms per pattern on 5 MB).
_B64URL = r"[A-Za-z0-9_-]"
_SHAPES: tuple[re.Pattern[str], ...] = tuple(
    re.compile(p)
    for p in (
        # PEM private keys, the whole block (or up to the end of a cut text).
        r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY-----[\s\S]*?(?:-----END (?:[A-Z0-9]+ )*PRIVATE KEY-----|\Z)",
        # JWTs: a base64url header starting ``{"``, then payload and signature. The whole dotted
        # run is taken, and its shape checked by ``_redact_shape``: a pattern that failed inside a
        # long run would be retried at every position of it (quadratic).
        rf"eyJ{_B64URL}*+(?:\.{_B64URL}*+)*+",
        r"AKIA[A-Z0-9]{16}\b",
        r"ASIA[A-Z0-9]{16}\b",
        r"gh[opsur]_[A-Za-z0-9]{20,}\b",
        r"github_pat_[A-Za-z0-9_]{20,}",
        r"xox[abprs]-[A-Za-z0-9-]{10,}",
        r"sk_(?:live|test)_[A-Za-z0-9]{16,}",
        r"rk_(?:live|test)_[A-Za-z0-9]{16,}",
        r"sk-(?:ant-|proj-)?[A-Za-z0-9_-]{20,}",
        r"AIza[0-9A-Za-z_-]{35}",
    )
)

# Case-insensitive shapes are found in a lower-cased copy of the text, then matched in place.
_KEYWORDS = (
    r"bearer|password|passwd|secret|api[_-]?key|apikey|access[_-]?token|refresh[_-]?token"
    r"|auth[_-]?token|private[_-]?key|access[_-]?key"
)
_TRIGGER = re.compile(_KEYWORDS)
# ``Bearer <token68>`` holding a digit, so that "Bearer authentication" stays prose.
_BEARER = re.compile(r"(?i:bearer)(?P<sep>\s+)(?=[A-Za-z0-9._~+/-]*[0-9])[A-Za-z0-9._~+/-]{12,}=*")
# ``password=…``, ``"apiKey": "…"``, ``AWS_SECRET_ACCESS_KEY=…``, ``client_secret: s3cr3t!``.
_ASSIGNMENT = re.compile(
    rf"(?P<key>(?i:{_KEYWORDS})(?:[_-][A-Za-z0-9]+|[A-Z][a-z0-9]*){{0,3}})"
    r"(?P<sep>[\"']?[ \t]*(?P<op>[:=])[ \t]*)"
    r"(?:(?P<q>[\"'])(?P<quoted>(?:(?!(?P=q))[^\\\n]|\\.){1,1024})(?P=q)|(?P<bare>[^\s\"'&,;<>]{3,}))"
)
_JWT = re.compile(rf"eyJ{_B64URL}{{8,}}\.{_B64URL}{{8,}}\.{_B64URL}*")
# A superset of every start above, one pass: most short strings of a result hold none of them.
_SCREEN = re.compile(
    r"-----BEGIN|eyJ|AKIA|ASIA|gh[opsur]_|github_pat_|xox|[sr]k_|sk-|AIza"
    r"|(?i:bearer|passw|secret|api[_-]?key|apikey|token|key)"
)
_SCREEN_BELOW = 4096
_NOT_A_WORD = re.compile(r"[^A-Za-z]")


def _after_word(text: str, start: int) -> bool:
    """Whether the match at ``start`` continues a word (so it is not a token of its own)."""
    return start > 0 and (text[start - 1].isalnum() or text[start - 1] == "_")


def _redact_shape(match: re.Match[str]) -> str:
    token = match[0]
    if _after_word(match.string, match.start()):
        return token
    if not token.startswith("eyJ"):
        return REDACTED
    jwt = _JWT.match(token)
    return REDACTED + token[jwt.end() :] if jwt else token


def _redact_keyword(text: str, start: int) -> tuple[int, str] | None:
    """The end and replacement of a bearer token or a credential assignment at ``start``."""
    if text[start] in "bB" and not _after_word(text, start):
        bearer = _BEARER.match(text, start)
        if bearer:
            return bearer.end(), f"{text[start : start + 6]}{bearer['sep']}{REDACTED}"
    # A keyword inside a word counts only at a camelCase boundary: ``clientSecret``, not ``nonsecret``.
    previous = text[start - 1] if start else " "
    if previous.isalnum() and not (text[start].isupper() and previous.islower()):
        return None
    match = _ASSIGNMENT.match(text, start)
    return (match.end(), _redact_assignment(match)) if match else None


def _redact_assignment(match: re.Match[str]) -> str:
    head = match["key"] + match["sep"]
    if match["quoted"] is not None:
        return f"{head}{match['q']}{REDACTED}{match['q']}"
    bare = match["bare"]
    # An unquoted ``key: value`` is often prose ("Password: required"): take only values that
    # look like secrets, six characters or more with a digit or a symbol in them.
    prose_like = match["op"] == ":" and not match["sep"].startswith(("'", '"'))
    if bare == REDACTED or (prose_like and (len(bare) < 6 or not _NOT_A_WORD.search(bare))):
        return match[0]
    return f"{head}{REDACTED}"


def _redact_keywords(text: str) -> str:
    probe = text.lower()
    if len(probe) != len(text):  # a few non-ASCII letters change length when lower-cased
        probe = text.encode("ascii", "replace").decode("ascii").lower()
    pieces: list[str] = []
    done = 0
    for trigger in _TRIGGER.finditer(probe):
        if trigger.start() < done:
            continue
        found = _redact_keyword(text, trigger.start())
        if found is not None:
            pieces += (text[done : trigger.start()], found[1])
            done = found[0]
    return "".join((*pieces, text[done:])) if pieces else text


_CREDENTIAL_KEY_SUFFIXES = (
    "password",
    "passwd",
    "secret",
    "apikey",
    "accesstoken",
    "refreshtoken",
    "idtoken",
    "authtoken",
    "privatekey",
    "accesskey",
    "credentials",
    "authorization",
)


def _is_credential_key(key: str) -> bool:
    norm = key.lower().replace("_", "").replace("-", "")
    return norm.endswith(_CREDENTIAL_KEY_SUFFIXES)


class _Redactor:
    """The secrets of one connection, applied to every string of a result."""

    __slots__ = ("_keys", "_secrets")

    def __init__(self, secrets: Sequence[str]) -> None:
        # Longest first, so that a secret containing another is replaced whole.
        usable = {s for s in secrets if len(s) >= MIN_SECRET_LENGTH}
        self._secrets = tuple(sorted(usable, key=len, reverse=True))
        self._keys: dict[str, tuple[str, bool]] = {}  # the keys of a list of objects repeat

    def text(self, text: str) -> str:
        for secret in self._secrets:
            text = text.replace(secret, REDACTED)
        if len(text) < _SCREEN_BELOW and not _SCREEN.search(text):
            return text
        for pattern in _SHAPES:
            text = pattern.sub(_redact_shape, text)
        return _redact_keywords(text)

    def key(self, key: str) -> tuple[str, bool]:
        """The redacted key, and whether it names a credential."""
        known = self._keys.get(key)
        if known is None:
            known = self._keys[key] = (self.text(key), _is_credential_key(key))
        return known

    def value(self, value: Any) -> Any:
        """A redacted copy of a JSON value, walked without recursion."""
        root: list[Any] = [None]
        stack: list[tuple[Any, Any, Any]] = [(value, root, 0)]
        while stack:
            src, parent, slot = stack.pop()
            if isinstance(src, str):
                parent[slot] = self.text(src)
            elif isinstance(src, Mapping):
                parent[slot] = self._members(src, stack)
            elif isinstance(src, list | tuple):
                items: list[Any] = [None] * len(src)
                parent[slot] = items
                stack.extend((item, items, i) for i, item in enumerate(src))
            else:
                parent[slot] = src
        return root[0]

    def _members(self, src: Mapping[Any, Any], stack: list[tuple[Any, Any, Any]]) -> dict[Any, Any]:
        new: dict[Any, Any] = {}
        for key, item in src.items():
            new_key, credential = self.key(key) if isinstance(key, str) else (key, False)
            new[new_key] = None
            if credential and isinstance(item, str) and item:
                new[new_key] = REDACTED
            else:
                stack.append((item, new, new_key))
        return new


def redact_text(text: str, secrets: Sequence[str]) -> str:
    """``text`` with the connection's secrets and credential-shaped substrings redacted."""
    return _Redactor(secrets).text(text)


def redact_value(value: Any, secrets: Sequence[str]) -> Any:
    """A copy of the JSON ``value`` with every string (keys too) redacted (R-12.2)."""
    return _Redactor(secrets).value(value)


def redact_block(block: Any, secrets: Sequence[str]) -> Any:
    """A copy of one content block, redacted, its binary payload (``data``, ``blob``) kept as is."""
    return _redact_block(block, _Redactor(secrets))


# --- caps ------------------------------------------------------------------------------------


def cap_value(value: Any, caps: Caps = Caps()) -> tuple[Any, bool]:
    """``value`` within ``caps``, and whether anything was cut (R-12.1). Iterative."""
    truncated = False
    root: list[Any] = [None]
    stack: list[tuple[Any, Any, Any, int]] = [(value, root, 0, 1)]
    while stack:
        src, parent, slot, depth = stack.pop()
        if isinstance(src, str):
            if len(src) > caps.max_string:
                src, truncated = src[: caps.max_string], True
            parent[slot] = src
        elif isinstance(src, Mapping | list | tuple) and depth > caps.max_depth:
            parent[slot], truncated = DEPTH_MARKER, True
        elif isinstance(src, Mapping):
            pairs = list(src.items())
            if len(pairs) > caps.max_keys:
                pairs, truncated = pairs[: caps.max_keys], True
            new: dict[Any, Any] = dict.fromkeys(k for k, _ in pairs)
            parent[slot] = new
            stack.extend((v, new, k, depth + 1) for k, v in pairs)
        elif isinstance(src, list | tuple):
            kept = src[: caps.max_items]
            truncated = truncated or len(src) > caps.max_items
            items: list[Any] = [None] * len(kept)
            parent[slot] = items
            stack.extend((v, items, i, depth + 1) for i, v in enumerate(kept))
        else:
            parent[slot] = src
    return root[0], truncated


def _cap_text(text: str, caps: Caps) -> tuple[str, bool]:
    """A text block's text: capped as JSON when it is a JSON object or array, else cut."""
    parsed = _parse_json_container(text)
    if parsed is None:
        return (text[: caps.max_string], True) if len(text) > caps.max_string else (text, False)
    capped, cut = cap_value(parsed, caps)
    if not cut:
        return text, False
    if isinstance(capped, dict):
        capped[TRUNCATED_KEY] = True
    return json.dumps(capped, ensure_ascii=False), True


def cap_block(block: Any, caps: Caps = Caps()) -> tuple[Any, bool]:
    """One content block within ``caps`` (its text, or its embedded resource's), and whether it was cut."""
    return _cap_block(block, caps)


def cap_text(text: str, caps: Caps = Caps()) -> tuple[str, bool]:
    """A text within ``caps`` (capped as JSON when it is a JSON object or array), and whether it was cut."""
    return _cap_text(text, caps)


def _parse_json_container(text: str) -> Any:
    stripped = text.lstrip()
    if not stripped or stripped[0] not in "{[":
        return None
    try:
        parsed = json.loads(stripped)
    except (ValueError, RecursionError):
        return None
    return parsed if isinstance(parsed, dict | list) else None


# --- the result ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Shaped:
    """A shaped ``tools/call`` result.

    ``full`` is the redacted, uncut result when ``truncated`` (to be stored, R-12.3), else ``None``.
    """

    result: dict[str, Any]
    truncated: bool
    full: dict[str, Any] | None


def shape_result(
    result: Mapping[str, Any],
    *,
    secrets: Sequence[str],
    caps: Caps = Caps(),
) -> Shaped:
    """Redact, then cap, an upstream ``tools/call`` result (SPEC section 6 step 16)."""
    redacted = _redact_result(result, _Redactor(secrets))
    shaped = dict(redacted)
    blocks, cut = _cap_content(redacted.get("content"), caps)
    if blocks is not None:
        shaped["content"] = blocks
    if redacted.get("structuredContent") is not None:
        structured, structured_cut = cap_value(redacted["structuredContent"], caps)
        cut = cut or structured_cut
        shaped["structuredContent"] = structured
    if not cut:
        return Shaped(result=redacted, truncated=False, full=None)
    _mark_truncated(shaped, caps)
    return Shaped(result=shaped, truncated=True, full=redacted)


def attach_result_id(result: Mapping[str, Any], result_id: str) -> dict[str, Any]:
    """A copy of a truncated result that names its stored full version (R-12.3)."""
    out = dict(result)
    structured = out.get("structuredContent")
    if isinstance(structured, dict):
        out["structuredContent"] = {**structured, RESULT_ID_KEY: result_id}
    out["content"] = [*(out.get("content") or []), _text_block(f"{RESULT_ID_KEY}: {result_id}")]
    return out


def _redact_result(result: Mapping[str, Any], redactor: _Redactor) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in result.items():
        if key == "content" and isinstance(value, list | tuple):
            out[key] = [_redact_block(block, redactor) for block in value]
        else:
            out[key] = redactor.value(value)
    return out


def _redact_block(block: Any, redactor: _Redactor) -> Any:
    """One content block; binary payloads are kept as they are."""
    if not isinstance(block, Mapping):
        return redactor.value(block)
    kind = block.get("type")
    binary = "data" if kind in ("image", "audio") else None
    out = {k: v if k == binary else redactor.value(v) for k, v in block.items()}
    resource = block.get("resource")
    if kind == "resource" and isinstance(resource, Mapping):
        out["resource"] = {k: v if k == "blob" else redactor.value(v) for k, v in resource.items()}
    return out


def _cap_content(content: Any, caps: Caps) -> tuple[list[Any] | None, bool]:
    if not isinstance(content, list):
        return None, False
    cut = len(content) > caps.max_items
    blocks: list[Any] = []
    for block in content[: caps.max_items]:
        new_block, block_cut = _cap_block(block, caps)
        blocks.append(new_block)
        cut = cut or block_cut
    return blocks, cut


def _cap_block(block: Any, caps: Caps) -> tuple[Any, bool]:
    if not isinstance(block, Mapping):
        return block, False
    if block.get("type") == "text" and isinstance(block.get("text"), str):
        text, cut = _cap_text(block["text"], caps)
        return {**block, "text": text}, cut
    resource = block.get("resource")
    if isinstance(resource, Mapping) and isinstance(resource.get("text"), str):
        text, cut = _cap_text(resource["text"], caps)
        return {**block, "resource": {**resource, "text": text}}, cut
    return block, False


def _mark_truncated(shaped: dict[str, Any], caps: Caps) -> None:
    structured = shaped.get("structuredContent")
    if isinstance(structured, dict):
        structured[TRUNCATED_KEY] = True
    limits = (
        f"(strings {caps.max_string} characters, arrays {caps.max_items} items, "
        f"objects {caps.max_keys} keys, nesting {caps.max_depth} levels)."
    )
    shaped["content"] = [*(shaped.get("content") or []), _text_block(f"{_NOTICE} {limits}")]


def _text_block(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}
