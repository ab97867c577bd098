"""No import circle anywhere under hilbench/: every import that runs counts, those inside
functions too (a circle hidden in a function is still two modules that cannot be loaded or
understood apart). Imports under ``if TYPE_CHECKING:`` only name types for annotations and are
left out (tests/import_graph.py reads the graph)."""

from __future__ import annotations

from tests.import_graph import circles, graph, imports_of, modules

# Circles another part of issue 32 owns, each with its owner; the lead removes an entry once
# that part is merged (the test fails when a listed circle is gone, so none stays stale).
KNOWN_CIRCLES: dict[frozenset[str], str] = {}


def test_no_import_circle_in_hilbench():
    found = {frozenset(group) for group in circles(graph())}
    unexpected = sorted(sorted(group) for group in found - KNOWN_CIRCLES.keys())
    assert unexpected == [], f"import circles: {unexpected}"
    stale = sorted(sorted(group) for group in KNOWN_CIRCLES.keys() - found)
    assert stale == [], f"listed circles that no longer exist (remove them): {stale}"


def test_the_check_finds_a_circle():
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}) == [["a", "b", "c"]]
    assert circles({"a": {"b"}, "b": set()}) == []
    assert circles({"a": {"b", "c"}, "b": {"a"}, "c": {"d"}, "d": {"c"}}) == [
        ["a", "b"], ["c", "d"]]


def test_the_graph_counts_imports_inside_functions(tmp_path):
    source = tmp_path / "mod.py"
    source.write_text(
        "from typing import TYPE_CHECKING\n"
        "import pkg.top\n"
        "if TYPE_CHECKING:\n    from pkg import typed\n"
        "def f():\n    from pkg.sub import thing\n    from . import sibling\n"
        "    from .sub import deep\n")
    known = {"pkg.top", "pkg.typed", "pkg.sub", "pkg.sub.deep", "pkg.sibling", "pkg.mod"}
    assert imports_of(source, "pkg.mod", known) == {"pkg.top", "pkg.sub", "pkg.sibling",
                                                     "pkg.sub.deep"}


def test_the_whole_package_is_read():
    folders = {name.split(".")[1] for name in modules() if name.count(".") > 1}
    assert {"store", "cli", "bench", "orchestrator", "workloads", "sim"} <= folders
    assert "hilbench.workloads.qubo.procedures.run" in modules()


def test_the_store_s_function_level_imports_are_in_the_graph():
    # pg_schema imports the migrations inside _migrate: a circle through such an import (the
    # schema ⇄ pg_schema one was) must be seen.
    assert "hilbench.store.migrations" in graph()["hilbench.store.pg_schema"]
    assert "hilbench.store.paths" in graph()["hilbench.store.engine"]
