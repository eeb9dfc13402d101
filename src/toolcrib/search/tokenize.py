"""Words of a tool or a query (SPEC R-5.2).

Text is lower-cased and split on non-alphanumerics and camelCase boundaries (``getStories`` ->
``get stories``; letters and digits that touch stay together: ``ec2``, ``3pm``, ``base64``).
Han, kana and hangul runs have no spaces to split on, so they become overlapping character
bigrams (a lone character stays a unigram): ``必应搜索`` -> ``必应 应搜 搜索``.

A light stemmer folds plurals so ``dividends``, ``addresses``, ``files`` meet ``dividend``,
``address``, ``file``; it touches nothing else (verb endings are left alone: measured, they
merged unrelated words more than they helped).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator

__all__ = [
    "DESCRIPTION_STOP_WORDS",
    "QUERY_STOP_WORDS",
    "chunks",
    "is_cjk",
    "query_words",
    "raw_words",
    "stem",
    "words",
]

_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af"
_CHUNK = re.compile(rf"([{_CJK}]+)|([^\W_{_CJK}]+)")
_CAMEL = re.compile(r"[A-Z]+(?![a-z])[0-9]*|[A-Z]?[a-z]+[0-9]*|[0-9]+[a-z]*")
_CJK_CHAR = re.compile(rf"[{_CJK}]")

# query stop-words, dropped from queries only (a tool's own words are never dropped).
QUERY_STOP_WORDS = frozenset(
    [
        "a",
        "an",
        "the",
        "to",
        "for",
        "my",
        "of",
        "in",
        "on",
        "at",
        "by",
        "with",
        "from",
        "and",
        "or",
        "is",
        "are",
        "was",
        "be",
        "been",
        "it",
        "its",
        "this",
        "that",
        "these",
        "those",
        "what",
        "which",
        "who",
        "whom",
        "whose",
        "when",
        "where",
        "why",
        "how",
        "me",
        "i",
        "we",
        "us",
        "our",
        "you",
        "your",
        "he",
        "she",
        "they",
        "them",
        "their",
        "please",
        "can",
        "could",
        "would",
        "should",
        "will",
        "shall",
        "may",
        "might",
        "must",
        "do",
        "does",
        "did",
        "done",
        "want",
        "need",
        "like",
        "help",
        "some",
        "any",
        "into",
        "onto",
        "about",
        "as",
        "via",
        "using",
        "use",
        "than",
        "then",
        "there",
        "here",
        "just",
        "also",
        "so",
        "if",
        "not",
        "no",
        "yes",
        "all",
        "each",
        "every",
        "let",
        "lets",
        "give",
        "show",
        "tell",
        "find",
        "make",
        "get",
        "got",
        "have",
        "has",
        "had",
        "one",
        "two",
        "new",
        "today",
        "now",
        "up",
        "out",
        "over",
        "under",
        "between",
        "within",
        "without",
        "through",
        "per",
        "other",
        "another",
        "same",
        "such",
        "more",
        "most",
        "very",
    ]
)
# Verbs such as "get", "find", "show", "make" stay: they are low-IDF but can name a tool
# ("git_show"). Dropping them changed nothing on the dev set.

# dropped from description scoring only; they sit on every merged or frozen tool's text.
DESCRIPTION_STOP_WORDS = frozenset(
    {"set", "connection", "connections", "frozen", "merged", "merge", "account", "accounts"}
)

# Closed compounds of tool prose, also indexed as their parts ("Fetch a website" answers
# "web page"). Tool side only: a query keeps its words as written.
_COMPOUNDS = {
    w: tuple(parts.split("+"))
    for w, parts in (
        item.split("=")
        for item in [
            "website=web+site",
            "webpage=web+page",
            "homepage=home+page",
            "screenshot=screen+shot",
            "database=data+base",
            "timezone=time+zone",
            "timestamp=time+stamp",
            "username=user+name",
            "filename=file+name",
            "filepath=file+path",
            "keyword=key+word",
            "workflow=work+flow",
            "workspace=work+space",
            "subdirectory=sub+directory",
            "codebase=code+base",
            "hashtag=hash+tag",
            "playlist=play+list",
            "dataset=data+set",
            "datetime=date+time",
            "mindmap=mind+map",
            "hackernews=hacker+news",
            "textbox=text+box",
        ]
    )
}

# Words whose trailing "s" is not a plural.
_NOT_PLURAL = frozenset(
    [
        "news",
        "series",
        "species",
        "always",
        "perhaps",
        "has",
        "was",
        "is",
        "this",
        "its",
        "us",
        "yes",
        "less",
        "bus",
        "gas",
        "plus",
        "aws",
        "ios",
        "macos",
        "dns",
        "https",
        "http",
        "os",
        "css",
        "js",
        "ts",
        "sms",
        "kubernetes",
        "redis",
        "postgres",
        "analysis",
        "status",
        "canvas",
        "atlas",
        "chaos",
        "axis",
        "basis",
        "thesis",
        "physics",
        "mathematics",
        "economics",
        "statistics",
        "politics",
        "metrics",
        "lens",
    ]
)


def stem(word: str) -> str:
    """Fold an English plural to its singular; leave every other word as it is."""
    if len(word) <= 3 or not word.isascii() or not word.endswith("s") or word in _NOT_PLURAL:
        return word
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    if word.endswith(("sses", "xes", "ches", "shes", "zzes")):
        return word[:-2]
    if word.endswith(("ss", "us", "is", "os")):
        return word
    return word[:-1]


def is_cjk(word: str) -> bool:
    return bool(_CJK_CHAR.match(word))


def _cjk_grams(run: str) -> Iterator[str]:
    if len(run) == 1:
        yield run
        return
    for i in range(len(run) - 1):
        yield run[i : i + 2]


def chunks(text: str) -> list[list[str]]:
    """Lower-cased word groups before stemming: one group per alphanumeric run, split at
    camelCase boundaries (``GitHub`` -> ``[git, hub]``); each CJK bigram is its own group."""
    out: list[list[str]] = []
    for match in _CHUNK.finditer(text):
        cjk, other = match.groups()
        if cjk:
            out.extend([gram] for gram in _cjk_grams(cjk))
        elif other.isascii():
            out.append([part.lower() for part in _CAMEL.findall(other)] or [other.lower()])
        else:
            out.append([other.lower()])
    return out


def raw_words(text: str, *, camel: bool = True) -> list[str]:
    """Lower-cased words before stemming, in order; ``camel=False`` keeps ``GitHub`` whole."""
    if camel:
        return [part for group in chunks(text) for part in group]
    return ["".join(group) for group in chunks(text)]


def _identity(word: str) -> str:
    return word


def words(text: str, *, stemming: bool = True, compounds: bool = False) -> list[str]:
    """The stemmed words of a tool field, in order. A camelCase run gives its parts and its
    whole (``GitHub`` -> ``git hub github``) so a query may name it either way. ``compounds``
    adds the parts of known closed compounds (``website`` -> ``web site``): prose only, since a
    name word is an identifier and its parts already meet a query through the prefix rule."""
    fold = stem if stemming else _identity
    out: list[str] = []
    for group in chunks(text):
        out.extend(fold(w) for w in group)
        if len(group) > 1:
            out.append(fold("".join(group)))
        if compounds:
            for word in group if len(group) == 1 else [*group, "".join(group)]:
                out.extend(_COMPOUNDS.get(fold(word), ()))
    return out


def query_words(
    text: str, known: Callable[[str], bool] = lambda _: False, *, stemming: bool = True
) -> list[str]:
    """The stemmed words of a query, stop-words dropped, first occurrence of each kept.

    A camelCase run stays whole when ``known`` (the index vocabulary) holds the whole
    (``GitHub`` -> ``github``); otherwise it gives its parts.
    """
    fold = stem if stemming else _identity
    seen: dict[str, None] = {}
    for group in chunks(text):
        whole = fold("".join(group))
        parts = [whole] if len(group) == 1 or known(whole) else [fold(w) for w in group]
        for raw, word in zip(group if len(parts) > 1 else ["".join(group)], parts, strict=True):
            if raw not in QUERY_STOP_WORDS:
                seen.setdefault(word, None)
    return list(seen)
