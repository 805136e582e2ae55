"""The package's shape (docs/architecture.md): no import cycles between its modules, and
modules short enough to read at a sitting. The layers themselves are the import
contract in pyproject.toml ([tool.importlinter], run by `make lint`)."""

from __future__ import annotations

from pathlib import Path

import grimp

PACKAGE = Path(__file__).resolve().parents[2] / "python" / "isthmus"
MAX_LINES = 400


def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in edges[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            part = []
            while True:
                w = stack.pop()
                part.append(w)
                if w == v:
                    break
            if len(part) > 1:
                found.append(sorted(part))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return found


def test_no_import_cycles() -> None:
    graph = grimp.build_graph("isthmus", exclude_type_checking_imports=True)
    edges = {m: set(graph.find_modules_directly_imported_by(m)) for m in graph.modules}
    assert _cycles(edges) == []


def test_modules_are_short() -> None:
    long = [
        p.relative_to(PACKAGE).as_posix()
        for p in sorted(PACKAGE.rglob("*.py"))
        if len(p.read_text().splitlines()) > MAX_LINES
    ]
    assert long == [], f"over {MAX_LINES} lines: {long}"
