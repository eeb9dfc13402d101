"""SPEC section 5 rules, each proved on hand-made tools searched among the 14 real catalogs of
shared/data/catalogs (the background a real gateway has), by the default engine: lexical and
meaning channels, fitted ranker and gate."""

from __future__ import annotations

import json

import numpy as np
from tests.conftest import SHARED
from tests.search.conftest import doc

from toolcrib.search import SearchDoc, SearchIndex
from toolcrib.search.semantic import doc_text, load_encoder

ENCODER = load_encoder()[0]
_VECTORS: dict[str, object] = {}


def _background() -> list[tuple[str, list[SearchDoc]]]:
    accounts = []
    for path in sorted((SHARED / "data" / "catalogs").glob("*.json")):
        account = path.stem.removeprefix("server-").removeprefix("mcp-server-")
        tools = json.loads(path.read_text(encoding="utf-8"))
        accounts.append((account, [doc(account, t["name"], t.get("description") or "") for t in tools]))
    return accounts


BACKGROUND = _background()


def _index(*docs_by_account: tuple[str, list], background: bool = True) -> SearchIndex:  # type: ignore[type-arg]
    """The default engine over the real catalogs plus the test's own tools."""
    index = SearchIndex(encoder=ENCODER)
    for account, docs in [*(BACKGROUND if background else []), *docs_by_account]:
        texts = [doc_text(d) for d in docs]
        missing = [t for t in texts if t not in _VECTORS]
        if missing:
            _VECTORS.update(zip(missing, index.encode(missing), strict=True))
        index.replace_account(account, docs, np.stack([_VECTORS[t] for t in texts]))  # type: ignore[arg-type]
    return index


def test_r5_2_exact_name_beats_prefix_beats_label_beats_description() -> None:
    index = _index(
        ("a1", [doc("a1", "invoice")]),
        ("a2", [doc("a2", "invoicer")]),
        ("a3", [doc("a3", "invo_sync")]),
        ("invoice", [doc("invoice", "do_thing")]),
        ("a4", [doc("a4", "other", "send an invoice")]),
    )
    # The lexical channel scores 5 / 3 / 3 / 2 / 1 (times the term's weight) ...
    evidence = index.evidence("invoice")
    assert evidence is not None
    score = {index.name_at(s): evidence.score[s] for s in np.flatnonzero(evidence.score)}
    assert score["a1__invoice"] > score["a2__invoicer"] == score["a3__invo_sync"]
    assert score["a3__invo_sync"] > score["invoice__do_thing"] > score["a4__other"] > 0
    # ... and after fusion with meaning, the exact name still wins.
    assert index.search("invoice", limit=5).hits[0].public_name == "a1__invoice"


def test_r5_3_query_about_unconnected_app_returns_nothing() -> None:
    index = _index(("notes", [doc("notes", "create_note", "Create a note")]))
    result = index.search("create an issue in Linear")
    assert result.hits == []


def test_r5_3_argument_values_in_the_query_do_not_hide_the_tool() -> None:
    index = _index(("time", [doc("time", "convert_time", "Convert time between timezones")]))
    assert (
        index.search("convert 3pm New York time to London time").hits[0].public_name == "time__convert_time"
    )


def test_r5_4_merged_and_frozen_words_do_not_score_in_descriptions() -> None:
    index = _index(("x", [doc("x", "ping", "Frozen account set merged connection")]))
    evidence = index.evidence("frozen account merged")
    assert evidence is not None
    assert evidence.score[index.slot("x__ping")] == 0


def test_r5_5_account_label_ranks_its_tools_first() -> None:
    legal = [doc("notion-legal", "create_page", "Create a page", "Notion")]
    marketing = [doc("notion-marketing", "create_page", "Create a page", "Notion")]
    index = _index(("notion-marketing", marketing), ("notion-legal", legal))
    assert index.search("create a legal page").hits[0].public_name == "notion-legal__create_page"


def test_r5_6_ties_break_on_codepoint_order_of_public_name() -> None:
    same = [(a, [doc(a, "lookup_invoice", "Look up an invoice by number")]) for a in ("b", "Z", "a", "é")]
    index = _index(*same)
    assert [h.public_name for h in index.search("look up an invoice", limit=5).hits[:4]] == [
        "Z__lookup_invoice",
        "a__lookup_invoice",
        "b__lookup_invoice",
        "é__lookup_invoice",
    ]


def test_r5_7_a_typo_still_finds_the_tool() -> None:
    index = _index(("w", [doc("w", "get_weather", "Current weather for a city")]))
    hits = index.search("wheather").hits
    assert hits[0].public_name == "w__get_weather"


def test_r5_11_unconnected_known_app_is_named_and_never_typo_matched() -> None:
    index = _index(("notes", [doc("notes", "write_note", "Write a note")]))
    result = index.search("notion")
    assert result.hits == []
    assert result.not_connected == ["notion"] or index.search("open Notion").not_connected == ["notion"]
    assert index.search("create a Jira ticket").not_connected == ["jira"]


def test_r5_11_connected_known_app_is_searched_normally() -> None:
    index = _index(("jira-main", [doc("jira-main", "create_issue", "Create an issue", "Jira")]))
    result = index.search("create a Jira issue")
    assert result.not_connected == []
    assert result.hits[0].public_name == "jira-main__create_issue"


def test_r5_11_app_carried_only_by_an_invisible_account_is_not_connected() -> None:
    index = _index(("jira-main", [doc("jira-main", "create_issue", "Create an issue", "Jira")]))
    result = index.search("create a Jira issue", visible=lambda _: False)
    assert result.not_connected == ["jira"]


def test_r5_2_chinese_query_finds_chinese_tool() -> None:
    index = _index(
        ("bing", [doc("bing", "bing_search", "使用必应搜索指定的关键词，并返回搜索结果列表")]),
        ("x", [doc("x", "get_weather", "Get the weather")]),
    )
    assert [h.public_name for h in index.search("必应搜索").hits] == ["bing__bing_search"]


def test_r15_2_replace_account_updates_one_account_without_touching_others() -> None:
    index = _index(("a", [doc("a", "send_mail")]), ("b", [doc("b", "read_mail")]), background=False)
    index.replace_account("a", [doc("a", "send_fax")])
    assert len(index) == 2
    assert [h.public_name for h in index.search("mail").hits] == ["b__read_mail"]
    assert [h.public_name for h in index.search("fax").hits] == ["a__send_fax"]
    index.remove_account("b")
    assert all(not h.public_name.startswith("b__") for h in index.search("read mail").hits)
    assert len(index) == 1


def test_r5_1_visible_and_withheld_filter_per_call() -> None:
    index = _index(*[(a, [doc(a, "delete_file", "Delete a file")]) for a in ("a", "b", "c")])
    result = index.search(
        "delete file",
        visible=lambda name: name != "c__delete_file",
        withheld=lambda name: name == "b__delete_file",
    )
    names = [h.public_name for h in result.hits]
    assert names[0] == "a__delete_file"
    assert not {"b__delete_file", "c__delete_file"} & set(names)
    assert result.restricted == ["b__delete_file"]
    everyone = [h.public_name for h in index.search("delete file", limit=5).hits]
    assert everyone[:3] == ["a__delete_file", "b__delete_file", "c__delete_file"]


def test_r5_3_confidence_is_high_for_a_full_match() -> None:
    index = _index(("g", [doc("g", "create_pull_request", "Create a pull request")]))
    assert index.search("create pull request").hits[0].confidence == "high"


def test_r5_3_time_server_ranks_get_current_time_first_for_current_time() -> None:
    path = SHARED / "data" / "catalogs" / "mcp-server-time.json"
    tools = json.loads(path.read_text(encoding="utf-8"))
    docs = [doc("time", tool["name"], tool["description"], "Time") for tool in tools]
    hits = _index(("time", docs)).search("current time in a timezone").hits
    assert hits[0].public_name == "time__get_current_time"


def _recon_index() -> SearchIndex:
    return _index(
        ("whois", [doc("whois", "whois_domain", "Look up the registration record of a domain")]),
        ("sitemap", [doc("sitemap", "get_sitemap_tree", "Fetch and parse the sitemap of a website")]),
        ("fs", [doc("fs", "write_file", "Write text to a file"), doc("fs", "read_file", "Read a file")]),
        ("maps", [doc("maps", "geocode_address", "Coordinates of a street address")]),
        ("chart", [doc("chart", "generate_pie_chart", "Generate a pie chart from data")]),
    )


def test_r5_3_long_task_finds_the_tools_whose_names_it_covers() -> None:
    task = (
        "Run a full reconnaissance on www.example.com. Give me a markdown report with the whois "
        "domain record and the sitemap tree, then write the file to /root/report.md."
    )
    names = [h.public_name for h in _recon_index().search(task, limit=5).hits]
    assert {"whois__whois_domain", "sitemap__get_sitemap_tree"} <= set(names)
    assert "maps__geocode_address" not in names
    assert "fs__read_file" not in names


def test_r5_3_long_question_about_nothing_connected_stays_empty() -> None:
    question = (
        "Compare two classic novels and explain which one has the better ending, "
        "and why readers still argue about it today."
    )
    assert _recon_index().search(question, limit=5).hits == []


def test_r5_3_one_name_word_is_not_enough_for_a_long_query() -> None:
    # "file" is one of write_file's two name words: under the half-weight floor and under the
    # two-name-words rule, so nothing comes back.
    assert _recon_index().search("tell me a story about a file clerk who loved old trains").hits == []


def test_r5_3_runners_up_of_a_long_task_have_low_confidence() -> None:
    task = "Collect the whois domain record and the sitemap tree for example.com and summarize the findings"
    hits = _recon_index().search(task, limit=5).hits
    assert len(hits) >= 2
    assert all(h.confidence == "low" for h in hits[1:])


def test_r5_3_lower_case_ordinary_word_naming_an_unconnected_app_returns_nothing() -> None:
    github = [doc("github", "create_issue", "Create a new issue in a GitHub repository", "GitHub")]
    index = _index(("github", github), background=False)
    result = index.search("create a linear issue")
    assert result.hits == []
    assert result.not_connected == ["linear"]


def test_r5_11_ordinary_word_used_as_a_word_does_not_veto() -> None:
    stats = [doc("stats", "fit_linear_regression", "Fit a linear regression to numeric columns", "Stats")]
    index = _index(("stats", stats))
    for query in ("linear regression on my columns", "fit a linear model"):
        result = index.search(query)
        assert result.not_connected == []
        assert result.hits[0].public_name == "stats__fit_linear_regression"
    audio = [doc("audio", "split_segments", "Split an audio file into segments by silence", "Audio")]
    index = _index(("audio", audio))
    assert index.search("segment this recording by silence").hits[0].public_name == "audio__split_segments"
