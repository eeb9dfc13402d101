"""Sanitization of provider prose before it reaches a card (R-4.7).

The text is normalized (NFKC, HTML entities), stripped of invisible characters, executable or
role-playing markup, markdown links and images and HTML tags; then every sentence that reads as
an instruction to the model is dropped whole, and the rest is cut on a word boundary. Two tests
judge a sentence: a multilingual blocklist of known phrasings (:mod:`toolcrib.catalog._lures`) and
an English structural rule that keeps what the tool does and drops what addresses the model
(:mod:`toolcrib.catalog._directives`); a sentence that opens a turn (``Assistant:``, ``Note to the
model``, ``New rule from the operator``) takes the rest of its paragraph with it.

Every pattern here runs in linear time on hostile input (no run rescanned from each of its
characters), and a text is read only as far as the card can show.
"""

from __future__ import annotations

import html
import re
import unicodedata

from toolcrib.catalog._directives import directive_kind
from toolcrib.catalog._lures import is_lure

__all__ = ["dropped_sentences", "sanitize_text", "truncate"]

_MAX_INPUT_CHARS = 20_000
_ELLIPSIS = "…"
_INVISIBLE_CATEGORIES = frozenset({"Cc", "Cf", "Co", "Cs", "Cn", "Zl", "Zp"})
_VARIATION_SELECTORS = re.compile("[\ufe00-\ufe0f\U000e0100-\U000e01ef\u180b-\u180f]")
_DROPPED_BLOCKS = re.compile(
    r"<!--.*?(?:-->|$)"
    r"|<\s*(script|style|iframe|object|embed|template|noscript|svg|math)\b.*?(?:<\s*/\s*\1\s*>|$)"
    r"|<\s*(system|sys|assistant|instructions?|important|admin|prompt|secret|hidden|im_start)\b[^<>]*>"
    r".*?(?:<\s*/\s*\2\s*>|$)"
    r"|\[INST\].*?(?:\[/INST\]|$)|<\|im_start\|>.*?(?:<\|im_end\|>|$)|<<\s*SYS\s*>>.*?(?:<<\s*/SYS\s*>>|$)",
    re.IGNORECASE | re.DOTALL,
)
# Bracketed runs stop at the next opening bracket: a run of ``[`` is then scanned once, not once per ``[``.
_MD_IMAGE = re.compile(r"!\[[^\[\]]*\]\([^()\[\]]*\)|!\[[^\[\]]*\]\[[^\[\]]*\]")
_MD_LINK = re.compile(r"\[([^\[\]]*)\]\([^()\[\]]*\)|\[([^\[\]]+)\]\[[^\[\]]*\]")
_MD_REFERENCE = re.compile(r"^[ \t]*\[[^\[\]\n]+\]:[ \t]*\S+.*$", re.MULTILINE)
_AUTOLINK = re.compile(r"<(?:https?|ftp|mailto|file|javascript|data):[^>\s]*>", re.IGNORECASE)
_BLOCK_TAGS = "br|p|div|li|ul|ol|tr|td|th|h[1-6]|hr|table|thead|tbody|blockquote|pre|section|article|dl|dt|dd"
_INLINE_TAGS = (
    "a|abbr|b|bdi|bdo|big|cite|code|del|dfn|em|font|i|img|input|ins|kbd|label|mark|meta|link|q|s|samp"
    "|small|span|strike|strong|sub|sup|tt|u|var|wbr|button|form|select|option|textarea|video|audio"
    "|source|picture|canvas|details|summary|header|footer|nav|main|aside|figure|figcaption|center"
    "|html|head|body|title|base|frame|frameset|caption|col|colgroup|tfoot|time|output|progress"
)
_BLOCK_TAG = re.compile(rf"</?\s*(?:{_BLOCK_TAGS})\b[^<>]*>", re.IGNORECASE)
_INLINE_TAG = re.compile(rf"</?\s*(?:{_INLINE_TAGS})\b[^<>]*>", re.IGNORECASE)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|(?<=[。！？])")
_LINE_BREAK = re.compile(r"(?<=[.!?:。！？：])[ \t]*\n\s*|\n\s*(?=[-*•+>#|]|\d+[.)]\s)")
_WINDOWS = (2, 3)
_PARAGRAPH = re.compile(r"\n[ \t]*\n")
_SPACES = re.compile(r"\s+")


def sanitize_text(text: object, max_chars: int) -> str:
    """Provider prose made safe for a card, at most ``max_chars`` characters (R-4.7)."""
    if not isinstance(text, str) or max_chars <= 0:
        return ""
    text = _normalize(text[:_MAX_INPUT_CHARS])
    text = _strip_markup(text)
    kept = _kept_sentences(_paragraphs(text), max_chars)
    return truncate(_SPACES.sub(" ", " ".join(kept)).strip(), max_chars)


def dropped_sentences(text: str) -> list[tuple[str, str]]:
    """Every sentence sanitization drops from the whole text, with why: ``lure`` (blocklist),
    ``turn``, ``in turn`` or ``directive`` (structure, see :mod:`toolcrib.catalog._directives`),
    ``split lure``. For measurements and admins; cards use :func:`sanitize_text`."""
    units = _paragraphs(_strip_markup(_normalize(text[:_MAX_INPUT_CHARS])))
    reasons = _reasons(units, _Verdicts())
    return [(reason, sentence) for (_, sentence), reason in zip(units, reasons, strict=True) if reason]


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


def _paragraphs(text: str) -> list[tuple[int, str]]:
    """The sentences of the text, each with the number of its paragraph (blank lines part them)."""
    return [(n, sentence) for n, part in enumerate(_PARAGRAPH.split(text)) for sentence in _sentences(part)]


def _sentences(text: str) -> list[str]:
    """Split on terminal punctuation; a line break splits only after one, or before a list item.

    So a lure spread over several lines (``Ignore\\nprevious\\ninstructions``) stays one sentence.
    """
    lines = _LINE_BREAK.sub("\x00", text).replace("\n", " ")
    return [s.strip() for part in lines.split("\x00") for s in _SENTENCE_END.split(part) if s.strip()]


def _kept_sentences(units: list[tuple[int, str]], max_chars: int) -> list[str]:
    """The sentences that survive, read only as far as the card can show (twice as far each round).

    A sentence is judged with the two after it in view, so a lure split over sentences is seen whole.
    """
    seen, verdicts = 16, _Verdicts()
    while True:
        dropped = _dropped(units[: seen + max(_WINDOWS)], verdicts)
        kept = [sentence for (_, sentence), drop in zip(units[:seen], dropped, strict=False) if not drop]
        if seen >= len(units) or sum(len(s) + 1 for s in kept) > max_chars:
            return kept
        seen *= 2


class _Verdicts(dict[str, str | None]):
    """Each sentence judged once: ``"lure"``, ``"turn"``, ``"directive"`` or None (kept)."""

    def __missing__(self, sentence: str) -> str | None:
        kind = directive_kind(sentence)
        verdict = kind if kind == "turn" else "lure" if is_lure(sentence) else kind
        self[sentence] = verdict
        return verdict


def _dropped(units: list[tuple[int, str]], verdicts: _Verdicts) -> list[bool]:
    return [reason is not None for reason in _reasons(units, verdicts)]


def _reasons(units: list[tuple[int, str]], verdicts: _Verdicts) -> list[str | None]:
    """Why each sentence goes, or None: a lure (blocklist) or a directive (structure); a turn opener
    takes the rest of its paragraph; then every run of 2-3 kept neighbours that reads as one lure."""
    sentences = [sentence for _, sentence in units]
    reasons = [verdicts[s] for s in sentences]
    turn: int | None = None
    for i, (paragraph, sentence) in enumerate(units):
        if turn == paragraph:
            reasons[i] = "in turn"
        elif verdicts[sentence] == "turn":
            turn = paragraph
    for size in _WINDOWS:
        for start in range(len(sentences) - size + 1):
            window = range(start, start + size)
            if all(reasons[i] is None for i in window) and is_lure(" ".join(sentences[i] for i in window)):
                for i in window:
                    reasons[i] = "split lure"
    return reasons
