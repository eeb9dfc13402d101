"""Reading an organization file: hostile YAML in, plain data with each value's line and column out.

The file is untrusted text (a pull request, a ConfigMap), so reading it is bounded before any
work is spent on it: at most :data:`MAX_BYTES`; its event stream (PyYAML's iterative parser) is
walked first for nesting depth and aliases, so neither a deep ``[[[[…`` (the composer recurses)
nor a billion-laughs alias tree is ever composed or expanded past :data:`MAX_NODES`. Values are
built from the composed nodes by hand and only for the plain YAML types (null, bool, int, float,
string, mapping, sequence): a tag that would construct an object (``!!python/object``) or any other
explicit tag is an error, as is a key given twice in one mapping.

Every value keeps the line and column where it starts (:class:`Marks`), so an error found later
(pydantic's, or a gateway validator's) is reported at its place in the file.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import yaml

from toolcrib.errors import InvalidArguments

__all__ = ["MAX_BYTES", "MAX_DEPTH", "MAX_NODES", "FileError", "Marks", "Problem", "load_text"]

MAX_BYTES = 1024 * 1024
MAX_DEPTH = 32
MAX_NODES = 100_000
"""Values built from the file, aliases expanded: a 1 MiB file of plain values stays well under."""

_PLAIN = {
    "tag:yaml.org,2002:null",
    "tag:yaml.org,2002:bool",
    "tag:yaml.org,2002:int",
    "tag:yaml.org,2002:float",
    "tag:yaml.org,2002:str",
}
_TIMESTAMP = "tag:yaml.org,2002:timestamp"
_MAP = "tag:yaml.org,2002:map"
_SEQ = "tag:yaml.org,2002:seq"

Path = tuple[str | int, ...]


@dataclass(frozen=True, slots=True)
class Problem:
    """One thing wrong with the file: where (1-based line and column), the path, and why."""

    line: int
    column: int
    path: str
    message: str

    def __str__(self) -> str:
        where = f" {self.path}:" if self.path else ""
        return f"line {self.line}, column {self.column}:{where} {self.message}"


class FileError(InvalidArguments):
    """The file cannot be applied: every problem with its line and column; nothing was changed."""

    def __init__(self, source: str, problems: list[Problem]) -> None:
        shown = "; ".join(str(p) for p in problems[:5])
        more = f" (and {len(problems) - 5} more)" if len(problems) > 5 else ""
        super().__init__(
            f"{source}: {shown}{more}",
            [
                {"pointer": f"{source}:{p.line}:{p.column}", "message": f"{p.path} {p.message}".strip()}
                for p in problems
            ],
        )
        self.problems = problems


@dataclass(slots=True)
class Marks:
    """Where each value (and each mapping key) of the file starts."""

    values: dict[Path, tuple[int, int]] = field(default_factory=dict)
    keys: dict[Path, tuple[int, int]] = field(default_factory=dict)

    def at(self, path: Path, *, key: bool = False) -> tuple[int, int]:
        """The place of ``path``, or of its nearest ancestor the file has (a missing field is
        reported at the object that lacks it)."""
        table = self.keys if key else self.values
        for end in range(len(path), -1, -1):
            found = table.get(path[:end]) or self.values.get(path[:end])
            if found is not None:
                return found
        return (1, 1)

    def problem(self, path: Path, message: str, *, key: bool = False) -> Problem:
        line, column = self.at(path, key=key)
        return Problem(line, column, dotted(path), message)


def dotted(path: Path) -> str:
    """``connections[0].url``."""
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def _mark(node: yaml.Node | yaml.Event | yaml.Mark) -> tuple[int, int]:
    mark = node if isinstance(node, yaml.Mark) else node.start_mark
    if mark is None:  # pragma: no cover - the composer marks every node and event
        return (1, 1)
    return (mark.line + 1, mark.column + 1)


def load_text(text: str, source: str) -> tuple[Any, Marks]:
    """The file's data and marks, or :class:`FileError`."""
    if len(text.encode("utf-8", "surrogatepass")) > MAX_BYTES:
        raise FileError(source, [Problem(1, 1, "", f"the file is over {MAX_BYTES} bytes")])
    try:
        _check_events(text, source)
        node = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.MarkedYAMLError as exc:
        mark: yaml.Mark | None = exc.problem_mark
        line, column = _mark(mark) if mark is not None else (1, 1)
        raise FileError(source, [Problem(line, column, "", f"not valid YAML: {exc.problem}")]) from exc
    except yaml.YAMLError as exc:
        raise FileError(source, [Problem(1, 1, "", "not valid YAML")]) from exc
    marks = Marks()
    if node is None:
        return {}, marks
    builder = _Builder(marks, source)
    return builder.value(node, ()), marks


def _check_events(text: str, source: str) -> None:
    """Nesting depth and a single document, on the event stream (nothing recursive runs yet)."""
    depth = 0
    documents = 0
    for event in yaml.parse(text, Loader=yaml.SafeLoader):
        if isinstance(event, yaml.CollectionStartEvent):
            depth += 1
            if depth > MAX_DEPTH:
                line, column = _mark(event)
                raise FileError(source, [Problem(line, column, "", f"nested deeper than {MAX_DEPTH} levels")])
        elif isinstance(event, yaml.CollectionEndEvent):
            depth -= 1
        elif isinstance(event, yaml.DocumentStartEvent):
            documents += 1
            if documents > 1:
                line, column = _mark(event)
                raise FileError(source, [Problem(line, column, "", "one YAML document per file")])


class _Builder:
    """Plain values from composed nodes, counting every value built (aliases included)."""

    def __init__(self, marks: Marks, source: str) -> None:
        self.marks = marks
        self.source = source
        self.built = 0
        self.scalars = yaml.SafeLoader("")

    def fail(self, node: yaml.Node, path: Path, message: str) -> FileError:
        line, column = _mark(node)
        return FileError(self.source, [Problem(line, column, dotted(path), message)])

    def value(self, node: yaml.Node, path: Path) -> Any:
        self.built += 1
        if self.built > MAX_NODES:
            raise self.fail(node, path, f"more than {MAX_NODES} values (aliases expanded)")
        self.marks.values.setdefault(path, _mark(node))
        if isinstance(node, yaml.MappingNode) and node.tag == _MAP:
            return self.mapping(node, path)
        if isinstance(node, yaml.SequenceNode) and node.tag == _SEQ:
            return [self.value(item, (*path, i)) for i, item in enumerate(node.value)]
        if isinstance(node, yaml.ScalarNode) and node.tag in _PLAIN:
            return self.scalars.construct_object(node, deep=True)
        if isinstance(node, yaml.ScalarNode) and node.tag == _TIMESTAMP:
            return node.value  # an implicit timestamp (2026-01-01): its text, never an object
        raise self.fail(node, path, f"the tag {node.tag!r} is not allowed (plain YAML values only)")

    def mapping(self, node: yaml.MappingNode, path: Path) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key_node, value_node in node.value:
            if not (isinstance(key_node, yaml.ScalarNode) and key_node.tag in _PLAIN):
                raise self.fail(key_node, path, "a key must be a plain string")
            key = str(self.scalars.construct_object(key_node))
            if key in out:
                raise self.fail(key_node, path, f"the key {key!r} is given twice")
            self.marks.keys[(*path, key)] = _mark(key_node)
            out[key] = self.value(value_node, (*path, key))
        return out
