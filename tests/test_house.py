"""The house rules of CONVENTIONS.md and ARCHITECTURE.md, kept true by tests."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from toolcrib.settings import Settings

SRC = Path(__file__).resolve().parents[1] / "src" / "toolcrib"
README = Path(__file__).resolve().parents[1] / "README.md"

# Each layer, and the toolcrib packages it must never import (imports go one way).
FORBIDDEN = {
    "catalog": {"search", "policy", "upstream", "store", "auth", "gateway", "web", "cli"},
    "search": {"catalog", "policy", "upstream", "store", "auth", "gateway", "web", "cli"},
    "policy": {"catalog", "search", "upstream", "store", "auth", "gateway", "web", "cli"},
    "upstream": {"store", "gateway", "web", "cli"},
    "store": {"gateway", "web", "cli", "upstream", "search", "policy", "auth"},
    "auth": {"gateway", "web", "cli", "store"},
    "gateway": {"web", "cli"},
    "web": {"cli"},
}


def _imports(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return {m.split(".")[1] for m in found if m.startswith("toolcrib.") and m.count(".") >= 1}


@pytest.mark.parametrize("layer", sorted(FORBIDDEN))
def test_imports_go_one_way(layer: str) -> None:
    offending = {
        str(path.relative_to(SRC)): sorted(_imports(path) & FORBIDDEN[layer])
        for path in (SRC / layer).rglob("*.py")
        if _imports(path) & FORBIDDEN[layer]
    }
    assert offending == {}


def test_every_setting_has_a_docstring() -> None:
    undocumented = [name for name, field in Settings.model_fields.items() if not field.description]
    assert undocumented == []


def test_every_setting_is_in_the_configuration_reference() -> None:
    """docs/configuration.md (generated from the settings model, #25) has a row for each setting."""
    text = (SRC.parents[1] / "docs" / "configuration.md").read_text()
    missing = [name for name in Settings.model_fields if f"| `TOOLCRIB_{name.upper()}` |" not in text]
    assert missing == []
