"""The house rules of CONVENTIONS.md and ARCHITECTURE.md, kept true by tests."""

from __future__ import annotations

import ast
import re
import tomllib
from importlib import metadata
from pathlib import Path

import pytest

from toolcrib.settings import Settings, field_docs

SRC = Path(__file__).resolve().parents[1] / "src" / "toolcrib"
README = Path(__file__).resolve().parents[1] / "README.md"

# Each layer, and the toolcrib packages it must never import (imports go one way).
FORBIDDEN = {
    "catalog": {"search", "policy", "upstream", "store", "auth", "gateway", "web", "cli"},
    "search": {"catalog", "policy", "upstream", "store", "auth", "gateway", "web", "cli", "eval"},
    "policy": {"catalog", "search", "upstream", "store", "auth", "gateway", "web", "cli"},
    "upstream": {"store", "gateway", "web", "cli"},
    "store": {"gateway", "web", "cli", "upstream", "search", "policy", "auth"},
    "auth": {"gateway", "web", "cli", "store"},
    "gateway": {"web", "cli"},
    "web": {"cli", "store"},
    "cli": {"store"},
    "eval": {"policy", "upstream", "store", "auth", "gateway", "web", "cli"},
}
RUNTIME = ("catalog", "search", "policy", "upstream", "store", "auth", "gateway", "web")
"""The packages a running gateway imports: none of them may import ``toolcrib.eval`` (fitting and
evaluation of search), which only ``cli/eval.py`` imports, inside its command."""


def _imports(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return {m.split(".")[1] for m in found if m.startswith("toolcrib.") and m.count(".") >= 1}


ALLOWED: dict[tuple[str, str], str] = {}
"""(file under src/toolcrib, forbidden package it may import anyway) -> why. Kept as short as it can
be: the faces reach the store only through the gateway (#33), so today it is empty."""


def _offending(layer: str) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for path in (SRC / layer).rglob("*.py"):
        name = str(path.relative_to(SRC))
        bad = sorted(p for p in _imports(path) & FORBIDDEN[layer] if (name, p) not in ALLOWED)
        if bad:
            found[name] = bad
    return found


@pytest.mark.parametrize("layer", sorted(FORBIDDEN))
def test_imports_go_one_way(layer: str) -> None:
    assert _offending(layer) == {}


def test_the_faces_reach_the_store_only_through_the_gateway() -> None:
    """web and cli import no ``toolcrib.store`` module, not even under TYPE_CHECKING or inside a
    function (#33), but where ``ALLOWED`` names the file with its reason."""
    assert {layer: _offending(layer) for layer in ("web", "cli")} == {"web": {}, "cli": {}}
    assert {(path, package) for path, package in ALLOWED if package == "store"} <= {
        (str(p.relative_to(SRC)), "store") for p in SRC.rglob("*.py") if "store" in _imports(p)
    }  # every allowance is still used


def test_the_mcp_handlers_are_module_level_functions() -> None:
    """No handler is a closure in a factory (#33): web/mcp.py defines no function inside another."""
    tree = ast.parse((SRC / "web" / "mcp.py").read_text())
    functions = (ast.FunctionDef, ast.AsyncFunctionDef)
    nested = [
        inner.name
        for outer in ast.walk(tree)
        if isinstance(outer, functions)
        for inner in ast.walk(outer)
        if inner is not outer and isinstance(inner, functions)
    ]
    assert nested == []


def test_no_runtime_package_imports_eval() -> None:
    offending = [
        str(path.relative_to(SRC))
        for layer in RUNTIME
        for path in (SRC / layer).rglob("*.py")
        if "eval" in _imports(path)
    ]
    assert offending == []


# --- no import circles (#25) -------------------------------------------------------------------
# Every import counts: at module level, inside a function, under TYPE_CHECKING. A function-level
# import may load something heavy late (the OpenTelemetry SDK, the encoder, the CLI's commands);
# it may never be the way round a circle.


def _module_name(path: Path) -> str:
    parts = path.relative_to(SRC.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _import_graph() -> dict[str, set[str]]:
    """Module -> the toolcrib modules it imports (``from pkg import sub`` is an edge to ``pkg.sub``
    when ``sub`` is a module, to ``pkg`` otherwise)."""
    paths = {_module_name(path): path for path in SRC.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in paths.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        edges: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                edges.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join([*anchor, base] if base else anchor)
                for alias in node.names:
                    sub = f"{base}.{alias.name}"
                    edges.add(sub if sub in paths else base)
        graph[name] = {edge for edge in edges if edge in paths and edge != name}
    return graph


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_no_import_circles() -> None:
    assert _circles(_import_graph()) == []


def test_the_circle_check_sees_a_deferred_import() -> None:
    """The check itself: a circle closed by an import inside a function is found."""
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert _circles(graph) == [["a", "b", "c"]]


# --- every declared dependency is used (#25) ----------------------------------------------------

# Dependencies the code names instead of importing: the database drivers SQLAlchemy loads from the
# URL's dialect, and the demo's MCP servers `make run` starts as commands. Each must still appear.
USED_BY_NAME = {
    "aiosqlite": (SRC / "settings.py", "sqlite+aiosqlite"),
    "psycopg": (SRC / "settings.py", "postgresql+psycopg"),
    "mcp-server-time": (SRC / "cli" / "quickstart.py", '"mcp-server-time"'),
    "mcp-server-git": (SRC / "cli" / "quickstart.py", '"mcp-server-git"'),
    "uv": (SRC / "catalog" / "registry_launch.py", '"pypi": "uvx"'),  # a registry's PyPI servers (#35)
}


def _declared() -> list[str]:
    """The run-time dependencies and every extra but ``dev``, by normalized distribution name."""
    project = tomllib.loads((SRC.parents[1] / "pyproject.toml").read_text())["project"]
    wanted = list(project["dependencies"])
    for extra, names in project["optional-dependencies"].items():
        if extra != "dev":
            wanted += names
    return sorted({re.sub(r"[-_.]+", "-", re.split(r"[\[<>=!~ ;]", spec)[0]).lower() for spec in wanted})


def test_every_declared_dependency_is_used() -> None:
    imported: set[str] = set()
    for path in SRC.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                imported.update(alias.name.partition(".")[0] for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                imported.add(node.module.partition(".")[0])
    modules: dict[str, set[str]] = {}
    for module, dists in metadata.packages_distributions().items():
        for dist in dists:
            modules.setdefault(re.sub(r"[-_.]+", "-", dist).lower(), set()).add(module)
    unused = []
    for name in _declared():
        if name in USED_BY_NAME:
            path, text = USED_BY_NAME[name]
            if text not in path.read_text():
                unused.append(name)
        elif not modules.get(name, set()) & imported:
            unused.append(name)
    assert unused == []


def test_every_setting_has_a_docstring() -> None:
    docs = field_docs()
    undocumented = [name for name in Settings.model_fields if not docs.get(name)]
    assert undocumented == []


def test_every_setting_is_in_the_configuration_reference() -> None:
    """docs/configuration.md (generated from the settings model, #25) has a row for each setting."""
    text = (SRC.parents[1] / "docs" / "configuration.md").read_text()
    missing = [name for name in Settings.model_fields if f"| `TOOLCRIB_{name.upper()}` |" not in text]
    assert missing == []
