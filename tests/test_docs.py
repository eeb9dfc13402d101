"""Docs users read are kept true: the README and docs tables are the benchmarks' JSON, rendered, every
relative link resolves, and the configuration reference is the settings model's (#25)."""

from __future__ import annotations

import importlib.util
import json
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from tests.conftest import ROOT, TOOLCRIB, env_for

README_PATH = ROOT / "README.md"


def test_readme_and_docs_tables_match_the_benchmark_json() -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "report.py"), "--check"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def _report() -> ModuleType:
    """bench/report.py itself: its RENDERERS name each marked table's JSON, its DOCS the files."""
    spec = importlib.util.spec_from_file_location("bench_report", ROOT / "bench" / "report.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_marked_table_has_its_json_committed() -> None:
    report = _report()
    marked = 0
    for doc in report.DOCS:
        text = doc.read_text(encoding="utf-8")
        for name, (source, _) in report.RENDERERS.items():
            if f"<!-- {name}:begin -->" in text:
                marked += 1
                assert (report.OUT / source).exists(), (doc.name, source)
    assert marked >= len(report.RENDERERS)  # each renderer draws at least one table


def test_every_renderer_draws_a_table_and_every_marker_is_closed() -> None:
    """A renderer no page uses, or a begin marker without its end, would leave a table unchecked."""
    report = _report()
    drawn: set[str] = set()
    for doc in report.DOCS:
        text = doc.read_text(encoding="utf-8")
        begins = re.findall(r"<!-- ([\w-]+):begin -->", text)
        ends = re.findall(r"<!-- ([\w-]+):end -->", text)
        assert begins == ends, doc.name
        assert set(begins) <= set(report.RENDERERS), (doc.name, set(begins) - set(report.RENDERERS))
        drawn |= set(begins)
    assert drawn == set(report.RENDERERS)
    assert len(report.RENDERERS) >= 6  # #25: every table of figures is rendered


def test_a_table_edited_by_hand_or_a_json_changed_fails_the_check(tmp_path: Path) -> None:
    """The check compares each marked table with its JSON, both ways a drift can happen."""
    report = _report()
    page = (ROOT / "docs" / "measured.md").read_text(encoding="utf-8")
    assert report.rendered(page) == page
    edited = page.replace("| `toolcrib --version` |", "| `toolcrib --version` | 0.01 s |", 1)
    assert edited != page
    assert report.rendered(edited) != edited
    figures = json.loads((report.OUT / "cli.json").read_text(encoding="utf-8"))
    figures["commands"]["toolcrib --version"]["median_s"] += 1.0
    assert report.cli(figures) not in page


def test_the_readme_is_a_quick_start() -> None:
    """#25: the two commands, a client, the main verbs and links; everything else in docs/."""
    text = README_PATH.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 220
    for heading in ("## The two commands", "## Point an MCP client at it", "## Command line", "## Read on"):
        assert heading in text
    linked = set(re.findall(r"\]\((docs/[\w.-]+\.md)", text))
    pages = {f"docs/{p.name}" for p in (ROOT / "docs").glob("*.md")}
    assert pages <= linked, pages - linked  # every page is reachable from the quick start


def test_the_make_targets_the_readme_names_say_what_the_makefile_does() -> None:
    """The README's words on `make run`, `make test` and `make check` are the Makefile's recipes."""
    text = README_PATH.read_text(encoding="utf-8")
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    assert "quickstart --database $(DB) --port $(PORT)" in makefile
    assert "PORT   ?= 8765" in makefile
    assert "http://127.0.0.1:8765/mcp" in text
    assert re.search(r"^test: install oidc-fixture conformance", makefile, re.M)
    assert "`make oidc-fixture`" in text
    assert "`make\nconformance`" in text
    assert "pytest -q -n 2 --dist worksteal --durations=20" in makefile
    flat = " ".join(text.split())  # the README's words, whatever their line breaks
    assert "two pytest workers that share the tests out" in flat
    assert "prints the 20 slowest tests" in flat
    assert "-m compileall" in makefile
    assert "compiles the project's modules once" in flat
    for tool in ("ruff format --check", "ruff check", "mypy"):
        assert tool in makefile
        assert tool in text


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation but hyphens dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def _anchors(page: Path) -> set[str]:
    found: set[str] = set()
    seen: dict[str, int] = {}
    text = re.sub(r"^```.*?^```", "", page.read_text(encoding="utf-8"), flags=re.S | re.M)
    for heading in re.findall(r"^#{1,6} (.+)$", text, re.M):
        slug = _slug(heading)
        found.add(slug if slug not in seen else f"{slug}-{seen[slug]}")
        seen[slug] = seen.get(slug, 0) + 1
    return found


def _prose(text: str) -> str:
    """The text without fenced code blocks and inline code, where brackets are not links."""
    text = re.sub(r"^```.*?^```", "", text, flags=re.S | re.M)
    return re.sub(r"`[^`\n]*`", "", text)


@pytest.mark.parametrize("page", [README_PATH, *sorted((ROOT / "docs").glob("*.md"))], ids=lambda p: p.name)
def test_every_relative_link_resolves(page: Path) -> None:
    """Each relative link and image names a file that exists, and a heading of it when it has an anchor."""
    broken = []
    for target in re.findall(r"\]\(([^)\s]+)\)", _prose(page.read_text(encoding="utf-8"))):
        if re.match(r"[a-z]+:", target):  # https:, mailto:
            continue
        path, _, anchor = target.partition("#")
        file = (page.parent / path).resolve() if path else page
        if not file.exists() or (anchor and (file.suffix != ".md" or anchor not in _anchors(file))):
            broken.append(target)
    assert broken == []


def test_the_configuration_reference_is_the_generated_one() -> None:
    """docs/configuration.md is written from the settings model; a setting changed without it fails."""
    from toolcrib.cli.reference import REFERENCE_PATH, configuration_reference

    committed = (ROOT / REFERENCE_PATH).read_text(encoding="utf-8")
    assert committed == configuration_reference(), "run: toolcrib config-reference -o docs/configuration.md"


def test_the_configuration_reference_command_writes_the_page(tmp_path: Path) -> None:
    out = tmp_path / "configuration.md"
    done = subprocess.run(
        [*TOOLCRIB, "config-reference", "-o", str(out)],
        env=env_for(),
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert out.read_text(encoding="utf-8") == (ROOT / "docs" / "configuration.md").read_text(encoding="utf-8")
    shown = subprocess.run([*TOOLCRIB, "--help"], env=env_for(), capture_output=True, text=True, check=False)
    assert "config-reference" not in shown.stdout  # hidden: it writes a doc of this repository


FIGURE = re.compile(
    r"^\**[~≈]?[-+]?\d[\d,]*(\.\d+)?\s*(ms|µs|s|MB|KB|GB|%|×|texts/s|tools/s|calls/s)\**$"  # 1.2 ms, 64 MB
    r"|^\**[-+]?\d*\.\d+\**$"  # 0.925
)


@pytest.mark.parametrize("page", [README_PATH, *sorted((ROOT / "docs").glob("*.md"))], ids=lambda p: p.name)
def test_no_table_of_figures_is_typed_by_hand(page: Path) -> None:
    """#25: a measured figure in a table comes from bench/out/*.json, between a renderer's markers.

    A record of earlier rounds (after a ``<!-- history: ... -->`` line, docs/performance.md) keeps
    the figures of the commits it names; their JSON was replaced by later runs."""
    text = re.sub(
        r"<!-- ([\w-]+):begin -->.*?<!-- \1:end -->", "", page.read_text(encoding="utf-8"), flags=re.S
    )
    text = text.split("<!-- history:")[0]
    typed = [
        line
        for line in text.splitlines()
        if line.startswith("|") and any(FIGURE.match(cell.strip()) for cell in line.strip("| ").split("|"))
    ]
    assert typed == []
