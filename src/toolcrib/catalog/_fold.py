"""The detection form of a sentence: what lure patterns are matched against (R-4.7).

Disguises are undone here, never in the text that is kept: accents are stripped, letters are
lower-cased, homoglyphs inside mixed-script words are folded to Latin, digits and symbols inside
words are read as letters (``ign0re``, ``$ecret``), and spaced-out letters are joined again
(``i g n o r e``). Fullwidth and other compatibility forms were already folded by NFKC.
"""

from __future__ import annotations

import re
import unicodedata

__all__ = ["fold", "squash"]

_CONFUSABLES = str.maketrans(
    {
        # Cyrillic
        "а": "a", "в": "b", "е": "e", "ё": "e", "і": "i", "ї": "i", "ј": "j",
        "к": "k", "м": "m", "н": "h", "о": "o", "п": "n", "р": "p", "с": "c", "т": "t", "у": "y",
        "х": "x", "ѕ": "s", "ԁ": "d", "ӏ": "l", "ɡ": "g", "ԛ": "q", "ԝ": "w", "ь": "b",
        # Greek
        "α": "a", "β": "b", "ε": "e", "η": "n", "ι": "i", "κ": "k", "ν": "v", "ο": "o", "ρ": "p",
        "τ": "t", "υ": "u", "χ": "x", "γ": "y", "ϲ": "c", "ѵ": "v",
        # Latin lookalikes NFKC leaves alone
        "ı": "i", "ȷ": "j", "ł": "l", "ø": "o", "đ": "d", "ß": "ss",
    }
)  # fmt: skip
_LEET = str.maketrans({"0": "o", "1": "i", "3": "e", "4": "a", "5": "s", "7": "t", "8": "b", "9": "g"})
_SYMBOL_LETTERS = re.compile(r"(?<=[^\W\d_])[@$](?=[^\W\d_])|(?<![\w@$])[@$](?=[^\W\d_]{2})")
_SPLIT = re.compile(r"[\W_]+")
_LATIN = re.compile(r"[a-z]")
_NON_LATIN_LETTER = re.compile(r"[\u0370-\u03ff\u0400-\u04ff\u0500-\u052f]")
_LETTER = re.compile(r"[^\W\d_]")
_DIGIT = re.compile(r"\d")


def fold(text: str) -> str:
    """The sentence as lower-case words separated by single spaces, disguises undone."""
    text = unicodedata.normalize("NFKD", text)
    text = "".join(c for c in text if not unicodedata.combining(c)).lower()
    text = _SYMBOL_LETTERS.sub(lambda m: "a" if m.group() == "@" else "s", text)
    words = [_fold_word(w) for w in _SPLIT.split(text) if w]
    return " ".join(_join_spelled_out(words))


def squash(folded: str) -> str:
    """The folded sentence with no spaces at all, for markers split across words (``ig nore``)."""
    return folded.replace(" ", "")


def _fold_word(word: str) -> str:
    if _LATIN.search(word) and _NON_LATIN_LETTER.search(word):
        word = word.translate(_CONFUSABLES)
    if _LETTER.search(word) and _DIGIT.search(word):
        word = word.translate(_LEET)
    return word


def _join_spelled_out(words: list[str]) -> list[str]:
    """``i g n o r e`` -> ``ignore``: runs of three or more one-letter words become one word."""
    out: list[str] = []
    run: list[str] = []
    for word in [*words, ""]:
        if len(word) == 1:
            run.append(word)
            continue
        if len(run) >= 3:
            out.append("".join(run))
        else:
            out.extend(run)
        run = []
        if word:
            out.append(word)
    return out
