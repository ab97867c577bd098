"""No import circle anywhere under hilbench/: every import that runs counts, those inside
functions too (a circle hidden in a function is still two modules that cannot be loaded or
understood apart). Imports under ``if TYPE_CHECKING:`` only name types for annotations and are
left out (tests/import_graph.py reads the graph)."""

from __future__ import annotations

from tests.import_graph import circles, graph, imports, modules

# Circles another part of issue 32 owns, each with its owner; the lead removes an entry once
# that part is merged (the test fails when a listed circle is gone, so none stays stale).
KNOWN_CIRCLES: dict[frozenset[str], str] = {
    frozenset({"hilbench.store.schema", "hilbench.store.pg_schema"}): "data (issue 32 item 5)",
}


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


def test_the_graph_counts_imports_inside_functions():
    """The store circle is two function-level imports: the reader must see them."""
    assert "hilbench.store.pg_schema" in imports("hilbench.store.schema") or \
        "hilbench.store.schema" in imports("hilbench.store.pg_schema")
    folders = {name.split(".")[1] for name in modules() if name.count(".") > 1}
    assert {"store", "cli", "bench", "orchestrator", "procedures", "sim"} <= folders
