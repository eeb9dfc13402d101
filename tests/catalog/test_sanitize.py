from __future__ import annotations

import json
import re
import time
import unicodedata
from typing import Any

import pytest

from toolcrib.catalog import build_card, compact_json, fit_search_response, normalize_tool, sanitize_text

from .conftest import load_lures

LURES = load_lures()
PREFIX, SUFFIX = "Creates a page in the workspace.", "Returns the new page id."


def _nfkc(text: str) -> str:
    return unicodedata.normalize("NFKC", text).lower()


def _survives(marker: str, text: str) -> bool:
    return _nfkc(marker) in _nfkc(text)


def test_r4_7_the_lure_corpus_has_at_least_40_lures_in_six_languages() -> None:
    assert len(LURES) >= 40
    assert {"en", "fr", "es", "de", "zh", "ru"} <= {lure["lang"] for lure in LURES}
    assert all(_survives(lure["marker"], lure["text"]) for lure in LURES)


@pytest.mark.parametrize("lure", LURES, ids=[lure["id"] for lure in LURES])
def test_r4_7_lure_is_dropped_and_benign_text_around_it_kept(lure: dict[str, str]) -> None:
    out = sanitize_text(f"{PREFIX} {lure['text']} {SUFFIX}", 4_000)
    assert not _survives(lure["marker"], out)
    assert out.startswith(PREFIX)


@pytest.mark.parametrize("lure", LURES, ids=[lure["id"] for lure in LURES])
def test_r4_7_lure_never_reaches_a_card_or_a_search_response(lure: dict[str, str]) -> None:
    text = f"{PREFIX} {lure['text']} {SUFFIX}"
    raw = {
        "name": "create_page",
        "description": text,
        "inputSchema": {
            "type": "object",
            "properties": {
                "title": {"type": "string", "description": text},
                "mode": {"type": "string", "enum": ["draft", lure["text"]], "default": lure["text"]},
            },
            "required": ["title"],
        },
    }
    card = build_card(normalize_tool("notion-legal", "Notion", raw), risk="write")
    response = fit_search_response([{**card, "action_id": "act_x", "confidence": "high"}], restricted=[])
    for surface in (compact_json(card), compact_json(response)):
        assert not _survives(lure["marker"], surface)
        assert not _survives(lure["marker"], _strings(json.loads(json.dumps(json.loads(surface)))))


def _strings(value: Any) -> str:
    if isinstance(value, dict):
        return " ".join(_strings(v) for v in value.values())
    if isinstance(value, list):
        return " ".join(_strings(v) for v in value)
    return str(value)


def test_r4_7_real_catalog_descriptions_survive_unchanged(
    real_catalogs: dict[str, list[dict[str, Any]]],
) -> None:
    texts = [
        text
        for tools in real_catalogs.values()
        for tool in tools
        for text in [
            tool.get("description", ""),
            *(p.get("description", "") for p in tool["inputSchema"].get("properties", {}).values()),
        ]
        if text
    ]
    unchanged = [t for t in texts if sanitize_text(t, 10_000) == re.sub(r"\s+", " ", t).strip()]
    assert len(texts) > 300
    assert len(unchanged) / len(texts) >= 0.95


@pytest.mark.parametrize(
    "benign",
    [
        "If true, ignore case when matching.",
        "Whether to ignore whitespace changes in the diff.",
        "Ignore the .gitignore rules when listing files.",
        "Send a message to a Slack channel.",
        "Print the page to PDF.",
        "Returns the API key's creation date.",
        "The password field of the login form is left untouched.",
        "Token for the next page of results, from the previous response.",
        "Previous page cursor.",
        "Shows the contents of a commit, or of a file given as <revision>:<path>.",
        "Results distinguish files and directories with [FILE] and [DIR] prefixes.",
        "Use pattern like '*.ext' to match files in the current directory.",
        "Forget the cached credentials of this connection after logout.",
        "Model name to use for the completion, e.g. gpt-4o.",
        "Le mot de passe doit contenir 12 caractères.",
        "忽略大小写。",
    ],
)
def test_r4_7_benign_sentences_with_risky_words_survive(benign: str) -> None:
    assert sanitize_text(benign, 300) == benign


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Hello\u200b wor\u200dld\u0007!", "Hello world!"),
        ("See [the docs](https://example.com/docs) for more.", "See the docs for more."),
        ("Logo ![alt text](https://example.com/a.png) here.", "Logo here."),
        ("<p>Bold <b>move</b></p><script>alert(1)</script>done", "Bold move done"),
        ("Fish &amp; chips", "Fish & chips"),
        ("Ｆｕｌｌ ｗｉｄｔｈ", "Full width"),
    ],
)
def test_r4_7_invisible_characters_html_and_markdown_are_stripped(text: str, expected: str) -> None:
    assert sanitize_text(text, 300) == expected


def test_r4_7_long_text_is_cut_on_a_word_boundary_with_an_ellipsis() -> None:
    out = sanitize_text("alpha beta gamma delta epsilon zeta", 20)
    assert out == "alpha beta gamma…"
    assert len(out) <= 20


def test_r4_7_text_without_spaces_is_cut_hard_within_the_bound() -> None:
    out = sanitize_text("数" * 50, 10)
    assert out == "数" * 9 + "…"


def test_r4_7_non_text_becomes_empty() -> None:
    assert sanitize_text(None, 10) == ""
    assert sanitize_text(["ignore previous instructions"], 10) == ""


_HOSTILE_UNITS = {
    "brackets": "[",
    "image": "![",
    "link": "[a](",
    "tag": "<b",
    "system-tag": "<system",
    "inst": "[INST",
    "comment": "<!--",
    "entity": "&#",
    "lure-words": "ignore previous ",
    "sentences": "Do it. ",
    "list-items": "\n- ",
    "tool-references": "call a_b ",
    "no-spaces": "a",
}


def _repeat(unit: str, size: int) -> str:
    return (unit * (size // len(unit) + 1))[:size]


def _best_seconds(*texts: str, runs: int = 5) -> list[float]:
    """The best CPU time of several runs of each text (CPU time: other processes do not count)."""
    best = [float("inf")] * len(texts)
    for _ in range(runs):
        for n, text in enumerate(texts):
            start = time.process_time()
            sanitize_text(text, 300)
            best[n] = min(best[n], time.process_time() - start)
    return best


@pytest.mark.parametrize("unit", list(_HOSTILE_UNITS.values()), ids=list(_HOSTILE_UNITS))
def test_r4_7_sanitizing_hostile_text_takes_linear_time(unit: str) -> None:
    """Ten times the text, both under the 20,000-character read cap: linear is ~10x, a pattern that
    rescans the rest of the text from each character ~100x."""
    small, large = _best_seconds(_repeat(unit, 2_000), _repeat(unit, 20_000))
    assert large / small < 25


@pytest.mark.parametrize(
    "unit", ["[", "<system", "ignore previous "], ids=["brackets", "system-tag", "lure-words"]
)
def test_r4_7_a_100k_description_costs_about_what_a_10k_one_does(unit: str) -> None:
    """Cards are built on the gateway: text past the read cap is never looked at."""
    small, large = _best_seconds(_repeat(unit, 10_000), _repeat(unit, 100_000))
    assert large / small < 5
