"""Sanitization of provider prose before it reaches a card (R-4.7).

The text is normalized (NFKC, HTML entities), stripped of invisible characters, executable or
role-playing markup, markdown links and images and HTML tags; then every sentence that reads as
an instruction to the model (see :mod:`toolcrib.catalog._lures`) is dropped whole, and the rest
is cut on a word boundary.
"""

from __future__ import annotations

import html
import re
import unicodedata

from toolcrib.catalog._lures import is_lure

__all__ = ["sanitize_text", "truncate"]

_MAX_INPUT_CHARS = 20_000
_ELLIPSIS = "…"
_INVISIBLE_CATEGORIES = frozenset({"Cc", "Cf", "Co", "Cs", "Cn", "Zl", "Zp"})
_VARIATION_SELECTORS = re.compile("[\ufe00-\ufe0f\U000e0100-\U000e01ef\u180b-\u180f]")
_DROPPED_BLOCKS = re.compile(
    r"<!--.*?(?:-->|$)"
    r"|<\s*(script|style|iframe|object|embed|template|noscript|svg|math)\b.*?(?:<\s*/\s*\1\s*>|$)"
    r"|<\s*(system|sys|assistant|instructions?|important|admin|prompt|secret|hidden|im_start)\b[^>]*>"
    r".*?(?:<\s*/\s*\2\s*>|$)"
    r"|\[INST\].*?(?:\[/INST\]|$)|<\|im_start\|>.*?(?:<\|im_end\|>|$)|<<\s*SYS\s*>>.*?(?:<<\s*/SYS\s*>>|$)",
    re.IGNORECASE | re.DOTALL,
)
_MD_IMAGE = re.compile(r"!\[[^\]]*\]\([^)]*\)|!\[[^\]]*\]\[[^\]]*\]")
_MD_LINK = re.compile(r"\[([^\]]*)\]\([^)]*\)|\[([^\]]+)\]\[[^\]]*\]")
_MD_REFERENCE = re.compile(r"^\s*\[[^\]]+\]:\s*\S+.*$", re.MULTILINE)
_AUTOLINK = re.compile(r"<(?:https?|ftp|mailto|file|javascript|data):[^>\s]*>", re.IGNORECASE)
_BLOCK_TAGS = "br|p|div|li|ul|ol|tr|td|th|h[1-6]|hr|table|thead|tbody|blockquote|pre|section|article|dl|dt|dd"
_INLINE_TAGS = (
    "a|abbr|b|bdi|bdo|big|cite|code|del|dfn|em|font|i|img|input|ins|kbd|label|mark|meta|link|q|s|samp"
    "|small|span|strike|strong|sub|sup|tt|u|var|wbr|button|form|select|option|textarea|video|audio"
    "|source|picture|canvas|details|summary|header|footer|nav|main|aside|figure|figcaption|center"
    "|html|head|body|title|base|frame|frameset|caption|col|colgroup|tfoot|time|output|progress"
)
_BLOCK_TAG = re.compile(rf"</?\s*(?:{_BLOCK_TAGS})\b[^>]*>", re.IGNORECASE)
_INLINE_TAG = re.compile(rf"</?\s*(?:{_INLINE_TAGS})\b[^>]*>", re.IGNORECASE)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|(?<=[。！？])")
_LINE_BREAK = re.compile(r"(?<=[.!?:。！？：])[ \t]*\n\s*|\n\s*(?=[-*•+>#|]|\d+[.)]\s)")
_WINDOWS = (2, 3)
_SPACES = re.compile(r"\s+")


def sanitize_text(text: object, max_chars: int) -> str:
    """Provider prose made safe for a card, at most ``max_chars`` characters (R-4.7)."""
    if not isinstance(text, str) or max_chars <= 0:
        return ""
    text = _normalize(text[:_MAX_INPUT_CHARS])
    text = _strip_markup(text)
    kept = _drop_lures(_sentences(text))
    return truncate(_SPACES.sub(" ", " ".join(kept)).strip(), max_chars)


def truncate(text: str, max_chars: int) -> str:
    """Cut on a word boundary and end with an ellipsis when over ``max_chars`` characters."""
    if len(text) <= max_chars:
        return text
    if max_chars <= 1:
        return _ELLIPSIS[:max_chars]
    cut = text[: max_chars - 1]
    space = cut.rfind(" ")
    if space >= max_chars // 2:
        cut = cut[:space]
    return cut.rstrip(" ,;:-–—(") + _ELLIPSIS


def _normalize(text: str) -> str:
    text = unicodedata.normalize("NFKC", text)
    for _ in range(2):
        text = html.unescape(text)
    text = unicodedata.normalize("NFKC", text)
    text = _VARIATION_SELECTORS.sub("", text)
    return "".join(_visible(c) for c in text)


def _visible(char: str) -> str:
    if char in "\n\r\t":
        return "\n" if char != "\t" else " "
    return "" if unicodedata.category(char) in _INVISIBLE_CATEGORIES else char


def _strip_markup(text: str) -> str:
    text = _DROPPED_BLOCKS.sub(" ", text)
    text = _MD_IMAGE.sub("", text)
    text = _MD_LINK.sub(lambda m: m.group(1) if m.group(1) is not None else m.group(2), text)
    text = _MD_REFERENCE.sub("", text)
    text = _AUTOLINK.sub("", text)
    text = _BLOCK_TAG.sub("\n", text)
    return _INLINE_TAG.sub("", text)


def _sentences(text: str) -> list[str]:
    """Split on terminal punctuation; a line break splits only after one, or before a list item.

    So a lure spread over several lines (``Ignore\\nprevious\\ninstructions``) stays one sentence.
    """
    lines = _LINE_BREAK.sub("\x00", text).replace("\n", " ")
    return [s.strip() for part in lines.split("\x00") for s in _SENTENCE_END.split(part) if s.strip()]


def _drop_lures(sentences: list[str]) -> list[str]:
    """Drop each lure sentence, then every run of 2-3 kept neighbours that reads as one together."""
    dropped = [is_lure(s) for s in sentences]
    for size in _WINDOWS:
        for start in range(len(sentences) - size + 1):
            window = range(start, start + size)
            if not any(dropped[i] for i in window) and is_lure(" ".join(sentences[i] for i in window)):
                for i in window:
                    dropped[i] = True
    return [s for s, drop in zip(sentences, dropped, strict=True) if not drop]
