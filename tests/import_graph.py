"""The import graph of ``hilbench/``, read from the source (nothing is imported), for the
import-circle and layering tests.

Every import that runs counts, those inside functions too (a circle or an arrow up hidden in a
function is still two modules that cannot be loaded or understood apart), relative imports
resolved. Imports under ``if TYPE_CHECKING:`` only name types for annotations and are left
out. ``from package import name`` is an arrow to ``package.name`` when that is a module, else to
``package`` itself.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Mapping
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = "hilbench"


@cache
def modules() -> dict[str, Path]:
    """Every module under ``hilbench/``, by its dotted name (a package by its own name)."""
    found: dict[str, Path] = {}
    for path in sorted((ROOT / PACKAGE).rglob("*.py")):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def _owner(name: str, known: dict[str, Path]) -> str | None:
    """The longest known module that ``name`` names or lies inside."""
    while name and name not in known:
        name = name.rpartition(".")[0]
    return name or None


def _typing_only(tree: ast.AST) -> set[int]:
    return {id(n) for block in ast.walk(tree) if isinstance(block, ast.If)
            and ast.unparse(block.test) in ("TYPE_CHECKING", "typing.TYPE_CHECKING")
            for stmt in block.body for n in ast.walk(stmt)}


def imports(module: str) -> set[str]:
    """The ``hilbench`` modules that ``module`` imports, anywhere in it, itself left out."""
    known = modules()
    return imports_of(known[module], module, set(known))


def imports_of(path: Path, module: str, known: set[str] | dict[str, Path]) -> set[str]:
    """The modules of ``known`` that the source at ``path`` (module ``module``) imports."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skip = _typing_only(tree)
    found: set[str | None] = set()
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.Import):
            found.update(_owner(a.name, known) for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*parts, base] if base else parts)
            for alias in node.names:
                full = f"{base}.{alias.name}"
                found.add(full if full in known else _owner(base, known))
    return {n for n in found if n is not None and n != module}


@cache
def graph() -> dict[str, frozenset[str]]:
    return {name: frozenset(imports(name)) for name in modules()}


def circles(graph: Mapping[str, Iterable[str]]) -> list[list[str]]:
    """Every group of modules that import each other round a circle (a strongly connected
    component of more than one module), each sorted, smallest first; Tarjan's algorithm,
    iterative so a deep graph does not reach Python's recursion limit."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph.get(root, ()))))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, edges = work[-1]
            nxt = next(edges, None)
            if nxt is not None:
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(graph.get(nxt, ())))))
                elif nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                group = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.append(member)
                    if member == node:
                        break
                if len(group) > 1:
                    found.append(sorted(group))
    return sorted(found)
