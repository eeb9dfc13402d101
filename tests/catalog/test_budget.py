from __future__ import annotations

import json
from typing import Any

from toolcrib.catalog import bounds, compact_json, fit_search_response, json_size, shrink_card


def _card(i: int, *, inputs: int = 10, description: str = "d" * 70) -> dict[str, Any]:
    return {
        "name": f"acct__tool_{i}",
        "action_id": f"act_{i:026d}",
        "connector": "Acme",
        "account": "acct",
        "description": "Does a thing. " * 20,
        "risk": "read",
        "confidence": "high",
        "inputs": [
            {"name": f"in_{j}", "type": "string", "required": j < 2, "description": description}
            for j in range(inputs)
        ],
        "complete": True,
    }


def test_r5_9_each_card_at_most_1800_bytes_and_the_whole_at_most_6000() -> None:
    response = fit_search_response([_card(i, inputs=30) for i in range(5)], restricted=[])
    assert response["results"]
    assert all(json_size(card) <= bounds.SEARCH_CARD_BYTES for card in response["results"])
    assert json_size(response) <= bounds.SEARCH_RESPONSE_BYTES


def test_r5_9_at_most_5_cards() -> None:
    response = fit_search_response([_card(i, inputs=0) for i in range(8)], restricted=[])
    assert [c["name"] for c in response["results"]] == [f"acct__tool_{i}" for i in range(5)]


def test_r5_9_a_card_that_fits_is_returned_untouched() -> None:
    card = _card(0, inputs=2)
    assert fit_search_response([card], restricted=[])["results"] == [card]


def test_r5_9_input_descriptions_go_first_then_optional_inputs() -> None:
    card = _card(0, inputs=14)
    shrunk = shrink_card(card, 1_200)
    assert shrunk is not None
    assert shrunk["complete"] is False
    assert all("description" not in i for i in shrunk["inputs"])
    assert len(shrunk["inputs"]) == 14
    smaller = shrink_card(card, 700)
    assert smaller is not None
    kept = [i["name"] for i in smaller["inputs"]]
    assert kept[:2] == ["in_0", "in_1"]
    assert kept == [f"in_{j}" for j in range(len(kept))]
    assert 2 < len(kept) < 14
    assert card["complete"] is True
    assert len(card["inputs"]) == 14


def test_r5_9_left_out_parts_are_whole_never_cut_mid_json() -> None:
    original = _card(0, inputs=30)
    response = fit_search_response([original], restricted=["a__b"])
    card = response["results"][0]
    assert json.loads(compact_json(response)) == response
    for entry in card["inputs"]:
        source = next(i for i in original["inputs"] if i["name"] == entry["name"])
        assert entry.items() <= source.items()
    assert card["description"] == original["description"]


def test_r5_9_a_card_that_cannot_fit_is_left_out() -> None:
    huge = {**_card(0, inputs=0), "description": "x" * 3_000}
    response = fit_search_response([huge, _card(1, inputs=0)], restricted=[])
    assert [c["name"] for c in response["results"]] == ["acct__tool_1"]


def test_r5_9_restricted_and_not_connected_names_fit_the_budget_whole() -> None:
    names = [f"account-{i}__some_restricted_tool_{i}" for i in range(500)]
    response = fit_search_response(
        [_card(i, inputs=30) for i in range(5)], restricted=names, not_connected=["linear"]
    )
    assert json_size(response) <= bounds.SEARCH_RESPONSE_BYTES
    assert response["not_connected"] == ["linear"]
    assert response["restricted"] == names[: len(response["restricted"])]
    assert len(response["restricted"]) >= 20
    assert len(response["results"]) >= 2


def test_r5_9_not_connected_key_only_when_given() -> None:
    assert fit_search_response([], restricted=[]) == {"results": [], "restricted": []}
    assert fit_search_response([], restricted=["a__b"], not_connected=[]) == {
        "results": [],
        "restricted": ["a__b"],
        "not_connected": [],
    }
