"""The gateway package's layout holds (#25, #33): no import circle, ``core`` the shared state only,
the background machinery imported by nothing but the process's lifecycle, the modules grouped in
feature packages with at most 12 left at the top.

Every import counts: at module level, inside a function and under ``TYPE_CHECKING`` alike (an
import deferred into a function to dodge a circle is still a circle).
"""

from __future__ import annotations

import ast
from pathlib import Path

import toolcrib.gateway

PACKAGE = Path(toolcrib.gateway.__file__).parent
PREFIX = "toolcrib.gateway."

CORE_HOLDS = {
    "audit",
    "audit.delivery",
    "governance",
    "governance.buckets",
    "discovery",
    "discovery.cards",
    "discovery.examples",
    "discovery.meaning",
    "discovery.handles",
    "identity",
    "identity.bearer",
    "storage",
    "live_catalog",
    "policy_cache",
    "connections.registry.cache",  # what the MCP registries answered (#35)
}
"""What ``core`` may import of its own package: the parts it holds, none of them a use case."""
BACKGROUND = {"process", "follower", "housekeeping", "connections.upstream_events"}
"""Started by the process's lifecycle alone: no other module imports them."""
LIFECYCLE = {"process"}
FEATURES = {"calls", "discovery", "identity", "connections", "audit", "governance", "orgfile", "resources"}
"""The feature packages: each a folder named for what its modules are for (#33)."""
MAX_TOP_LEVEL = 12


def _graph() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for path in PACKAGE.rglob("*.py"):
        name = ".".join(path.relative_to(PACKAGE).with_suffix("").parts).removesuffix(".__init__")
        found: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                found |= {a.name for a in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                found |= {node.module} | {f"{node.module}.{a.name}" for a in node.names}
        graph[name] = {m.removeprefix(PREFIX) for m in found if m.startswith(PREFIX)} - {name}
    return {m: targets & graph.keys() for m, targets in graph.items()}


def _reaches(graph: dict[str, set[str]], start: str) -> set[str]:
    seen: set[str] = set()
    todo = list(graph[start])
    while todo:
        m = todo.pop()
        if m not in seen:
            seen.add(m)
            todo.extend(graph[m])
    return seen


def test_no_gateway_module_imports_itself_back_by_any_path() -> None:
    graph = _graph()
    assert len(graph) > 50
    assert [m for m in sorted(graph) if m in _reaches(graph, m)] == []


def test_core_imports_only_the_state_it_holds() -> None:
    assert _graph()["core"] <= CORE_HOLDS


def test_only_the_lifecycle_imports_the_background_machinery() -> None:
    graph = _graph()
    importers = {m: sorted(i for i, targets in graph.items() if m in targets) for m in BACKGROUND}
    assert {m: [i for i in found if i not in LIFECYCLE] for m, found in importers.items()} == {
        m: [] for m in BACKGROUND
    }


def test_at_most_twelve_modules_stay_at_the_top_of_the_gateway() -> None:
    top = sorted(p.stem for p in PACKAGE.glob("*.py") if p.stem != "__init__")
    assert len(top) <= MAX_TOP_LEVEL, top


def test_the_rest_lives_in_feature_packages_with_a_minimal_init() -> None:
    packages = {p.parent.name for p in PACKAGE.glob("*/__init__.py")}
    assert packages == FEATURES
    for name in FEATURES - {"orgfile"}:
        init = ast.parse((PACKAGE / name / "__init__.py").read_text())
        assert [type(n) for n in init.body] == [ast.Expr], name  # a docstring, no re-exports


def test_no_two_modules_anywhere_are_called_limits() -> None:
    assert sorted(PACKAGE.parent.rglob("limits.py")) == []
