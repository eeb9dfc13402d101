"""Query words that are argument values (the refinement of SPEC R-5.3).

"convert 3pm New York time to London time" is about a time-zone tool; ``3pm``, ``new york``
and ``london`` describe the call, not the tool. Words recognized here may be left out of the
floor's total weight **when they match nothing** in the catalog. Recognized: numbers and words
with digits (``3pm``, ``2024``, ``ec2``), dates and times, quoted strings, paths, URLs, e-mail
addresses, upper-case codes written by the user (``AAPL``, ``USD``), words the user capitalized in
the middle of a sentence (``Kathmandu``, ``New York``: names, whatever they name), and calendar words (months,
weekdays, "today"). There is no gazetteer of places, names or currencies: such a word that
matches nothing simply weighs in the query, and the fitted gate (``gate.py``) reads how much of
the query nothing matches as one of its features.

Every pattern is anchored so that a failed attempt is not retried from each later position of
the same word: the scan is linear in the query's length (a 40,000-character word took 27 s
before the anchors).
"""

from __future__ import annotations

import re

from toolcrib.search.tokenize import raw_words, stem

__all__ = ["value_words"]

_SPANS = re.compile(
    r"""("[^"]*"|“[^”]*”|'[^']{2,}'(?!\w)"""  # quoted strings
    r"""|(?<![a-z0-9+.-])[a-z][a-z0-9+.-]*://\S+"""  # URLs
    r"""|(?<![\w.+-])[\w.+-]+@[\w-]+\.[\w.]+"""  # e-mail addresses
    r"""|(?:~|\.{1,2})?(?:/[\w.@~-]+)+/?"""  # paths (a match never fails once it starts)
    r"""|(?<![\w-])[\w-]+\.(?:pdf|docx?|xlsx?|csv|json|txt|md|png|jpe?g|gif|wav|mp3|mp4|pptx?|html?|py|zip)\b"""
    r"""|\b[A-Z]{2,6}\b"""  # codes the user wrote in capitals (tickers, currencies)
    r"""|(?<=[a-z,;:] )[A-Z][a-z]+(?:[ -][A-Z][a-z]+)*)"""  # names the user wrote capitalized mid-sentence
)

_MONTHS = [
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
    "jan",
    "feb",
    "mar",
    "apr",
    "jun",
    "jul",
    "aug",
    "sep",
    "sept",
    "oct",
    "nov",
    "dec",
    "monday",
    "tuesday",
    "wednesday",
    "thursday",
    "friday",
    "saturday",
    "sunday",
    "today",
    "tomorrow",
    "yesterday",
    "tonight",
    "morning",
    "afternoon",
    "evening",
    "midnight",
    "noon",
    "am",
    "pm",
    "utc",
    "gmt",
    "est",
    "pst",
    "cet",
    "week",
    "weekend",
    "month",
    "year",
    "hour",
    "minute",
]

_GAZETTEER = frozenset(_MONTHS)


def _span_words(query: str) -> set[str]:
    found: set[str] = set()
    for match in _SPANS.finditer(query):
        found.update(stem(w) for w in raw_words(match.group(0), camel=False))
        found.update(stem(w) for w in raw_words(match.group(0)))
    return found


def value_words(query: str) -> set[str]:
    """The (stemmed) query words that read as argument values rather than as what a tool does."""
    found = _span_words(query)
    for word in raw_words(query) + raw_words(query, camel=False):
        if any(ch.isdigit() for ch in word) or word in _GAZETTEER:
            found.add(stem(word))
    return found
