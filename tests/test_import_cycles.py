"""No import circle inside hilbench/procedures or hilbench/orchestrator: every import that runs
counts, those inside functions too (a circle hidden in a function is still two modules that
cannot be loaded or understood apart). Imports under ``if TYPE_CHECKING:`` only name types for
annotations and are left out."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("hilbench.procedures", "hilbench.orchestrator")


def modules(package: str) -> dict[str, Path]:
    folder = ROOT / package.replace(".", "/")
    return {f"{package}.{p.stem}" if p.stem != "__init__" else package: p
            for p in folder.glob("*.py")}


def imports(path: Path, known: set[str]) -> set[str]:
    """The modules of ``known`` that ``path`` imports, anywhere in it."""
    found: set[str] = set()
    tree = ast.parse(path.read_text(encoding="utf-8"))
    typing_only = {id(n) for block in ast.walk(tree) if isinstance(block, ast.If)
                   and ast.unparse(block.test) in ("TYPE_CHECKING", "typing.TYPE_CHECKING")
                   for stmt in block.body for n in ast.walk(stmt)}
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names = [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
        else:
            continue
        found.update(n for n in names if n in known)
    return found


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every import circle, each once, as the path that closes it."""
    found: list[list[str]] = []
    seen: set[frozenset[str]] = set()

    def visit(start: str, node: str, path: list[str]) -> None:
        for nxt in sorted(graph[node]):
            if nxt == start:
                key = frozenset(path)
                if key not in seen:
                    seen.add(key)
                    found.append([*path, start])
            elif nxt not in path and nxt > start:  # each circle from its smallest module
                visit(start, nxt, [*path, nxt])

    for start in sorted(graph):
        visit(start, start, [start])
    return found


@pytest.mark.parametrize("package", PACKAGES)
def test_no_import_circle(package):
    found = modules(package)
    graph = {name: imports(path, set(found)) - {name} for name, path in found.items()}
    assert cycles(graph) == []


def test_the_check_finds_a_circle():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}) == [["a", "b", "c", "a"]]
    assert cycles({"a": {"b"}, "b": set()}) == []
