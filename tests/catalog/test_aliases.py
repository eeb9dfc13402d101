from __future__ import annotations

from toolcrib.catalog.aliases import build_aliases

from .conftest import record_of


def test_r4_4_conforming_names_keep_themselves() -> None:
    assert build_aliases(["owner", "repo_name", "x1"]) == {
        "owner": "owner",
        "repo_name": "repo_name",
        "x1": "x1",
    }


def test_r4_4_other_names_become_numbered_aliases_in_schema_order() -> None:
    aliases = build_aliases(["perPage", "owner", "my-field", "a.b", "with space", "Ünïcode"])
    assert aliases == {
        "param_01": "perPage",
        "owner": "owner",
        "param_02": "my-field",
        "param_03": "a.b",
        "param_04": "with space",
        "param_05": "Ünïcode",
    }


def test_r4_4_a_real_field_named_param_01_keeps_its_name_and_never_collides() -> None:
    aliases = build_aliases(["Weird", "param_01", "param_02", "Other"])
    assert aliases == {
        "param_03": "Weird",
        "param_01": "param_01",
        "param_02": "param_02",
        "param_04": "Other",
    }


def test_r4_4_names_over_40_characters_are_aliased() -> None:
    forty, forty_one = "a" * 40, "a" * 41
    assert build_aliases([forty, forty_one]) == {forty: forty, "param_01": forty_one}


def test_r4_4_numbering_goes_past_99_without_colliding() -> None:
    names = [f"F{i}" for i in range(120)]
    aliases = build_aliases(names)
    assert len(aliases) == 120
    assert aliases["param_100"] == "F99"
    assert sorted(aliases.values()) == sorted(names)


def test_r4_4_required_names_missing_from_properties_get_an_alias_too() -> None:
    record = record_of(
        {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a", "Hidden-One"]}
    )
    assert record.aliases == {"a": "a", "param_01": "Hidden-One"}
