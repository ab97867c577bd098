"""The generator must reproduce NeuroBench's QUBO matrices byte for byte."""

from __future__ import annotations

import json
from pathlib import Path

import networkx as nx
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hilbench.workloads.qubo import (
    WorkloadError,
    edge_count,
    edges_in_graph,
    generate_qubo,
    matrix_sha256,
    qubo_graph,
)

VECTORS = Path(__file__).resolve().parents[2] / "protocols" / "vectors" / "qubo_matrices.json"


def neurobench_matrix(n: int, density: float, seed: int) -> np.ndarray:
    """NeuroBench's recipe (system_benchmarks QUBO/mis.py), followed step by step."""
    graph = nx.generators.gnm_random_graph(
        n=n, m=int(0.5 * density * n**2), directed=False, seed=seed
    )
    adjacency = np.array(nx.adjacency_matrix(graph).toarray())
    return (-1 * np.eye(n) + 8 / 2 * adjacency).astype(np.int8)


@settings(max_examples=60, deadline=None)
@given(
    n=st.integers(min_value=2, max_value=70),
    density=st.floats(min_value=1e-3, max_value=1.0, allow_nan=False, exclude_min=False),
    seed=st.integers(min_value=0, max_value=2**40),
)
def test_matches_neurobench_recipe_for_any_workload(n: int, density: float, seed: int) -> None:
    ours = generate_qubo(n, density, seed)
    assert ours.dtype == np.int8
    assert ours.flags.c_contiguous
    assert ours.tobytes() == neurobench_matrix(n, density, seed).tobytes()


@pytest.mark.parametrize(
    "case",
    json.loads(VECTORS.read_text())["vectors"],
    ids=lambda c: f"{c['nodes']}-{c['density']}-{c['seed']}",
)
def test_recorded_vectors(case: dict) -> None:
    """Hashes recorded from NeuroBench's recipe; fails if networkx's random draw ever changes."""
    q = generate_qubo(case["nodes"], case["density"], case["seed"])
    assert q.shape == (case["nodes"], case["nodes"])
    assert (np.count_nonzero(q) - case["nodes"]) // 2 == case["edges"]
    assert matrix_sha256(q) == case["sha256"]


def test_vectors_cover_a_thousand_node_graph() -> None:
    cases = json.loads(VECTORS.read_text())["vectors"]
    assert any(case["nodes"] >= 1000 for case in cases)


def test_matrix_structure() -> None:
    q = generate_qubo(60, 0.1, 3)
    assert np.all(np.diagonal(q) == -1)
    assert np.array_equal(q, q.T)
    off = q[~np.eye(60, dtype=bool)]
    assert set(np.unique(off)) == {0, 4}
    assert np.count_nonzero(off) == 2 * edge_count(60, 0.1)


def test_edge_count_uses_neurobench_operation_order() -> None:
    # 0.5 * 0.58 * 100 truncates to 28; multiplying n*n first and halving last gives 29.
    assert edge_count(10, 0.58) == 28
    assert qubo_graph(10, 0.58, 0).number_of_edges() == 28


def test_full_density_is_the_complete_graph() -> None:
    graph = qubo_graph(12, 1.0, 5)
    assert graph.number_of_edges() == 66 == edges_in_graph(12, 1.0)
    assert edge_count(12, 1.0) == 72  # requested, more than exist


def test_different_seeds_give_different_graphs() -> None:
    assert matrix_sha256(generate_qubo(100, 0.05, 0)) != matrix_sha256(generate_qubo(100, 0.05, 1))


@pytest.mark.parametrize(
    ("nodes", "density", "seed", "field"),
    [
        (1, 0.1, 0, "nodes"),
        (0, 0.1, 0, "nodes"),
        (10, 0.0, 0, "density"),
        (10, 1.5, 0, "density"),
        (10, float("nan"), 0, "density"),
        (10, 0.1, -1, "seed"),
        (10.0, 0.1, 0, "nodes"),
        (10, 0.1, 1.5, "seed"),
    ],
)
def test_rejects_undefined_workloads(nodes, density, seed, field) -> None:
    with pytest.raises(WorkloadError) as info:
        generate_qubo(nodes, density, seed)
    assert info.value.field == field
    assert str(info.value).startswith(field)


def test_sha256_refuses_non_int8() -> None:
    with pytest.raises(ValueError, match="int8"):
        matrix_sha256(np.zeros((2, 2), dtype=np.int64))


@pytest.mark.parametrize("chunk", [7, 64, 1 << 22])
def test_edge_replay_matches_networkx_across_draw_chunks(monkeypatch, chunk: int) -> None:
    """The same edge set however the random stream is cut (odd chunks split a pair's draws)."""
    from hilbench.workloads.qubo import generator

    monkeypatch.setattr(generator, "_RAW_CHUNK", chunk)
    n, density, seed = 150, 0.3, 11
    u, v = generator.workload_edges(n, density, seed)
    expected = sorted(tuple(sorted(e)) for e in qubo_graph(n, density, seed).edges())
    assert list(zip(u.tolist(), v.tolist(), strict=True)) == expected
