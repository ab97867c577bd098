"""Sparse int64 cost must equal x^T Q x, for one sample and for many."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hilbench.workloads.qubo import SparseQubo, bks_gap, generate_qubo, qubo_graph


def dense_cost(q: np.ndarray, x: np.ndarray) -> int:
    x64 = x.astype(np.int64)
    return int(x64 @ q.astype(np.int64) @ x64)


@settings(max_examples=40, deadline=None)
@given(
    n=st.integers(min_value=2, max_value=60),
    density=st.sampled_from([0.01, 0.05, 0.1, 0.25, 0.7, 1.0]),
    seed=st.integers(min_value=0, max_value=10_000),
    sample_seed=st.integers(min_value=0, max_value=2**32 - 1),
)
def test_cost_equals_dense_quadratic_form(n, density, seed, sample_seed) -> None:
    q = generate_qubo(n, density, seed)
    sparse = SparseQubo.from_matrix(q)
    xs = np.random.default_rng(sample_seed).integers(0, 2, size=(8, n))
    expected = [dense_cost(q, x) for x in xs]
    assert [sparse.cost(x) for x in xs] == expected
    assert sparse.costs(xs).tolist() == expected
    assert sparse.costs(xs).dtype == np.int64


def test_from_graph_equals_from_matrix() -> None:
    a = SparseQubo.from_matrix(generate_qubo(200, 0.1, 4))
    b = SparseQubo.from_graph(qubo_graph(200, 0.1, 4))
    for name in ("diag", "u", "v", "weight"):
        assert np.array_equal(getattr(a, name), getattr(b, name)), name
    assert set(a.weight.tolist()) == {8}


def test_cost_does_not_overflow_int8_range() -> None:
    # All 300 nodes chosen in a complete graph: -300 + 8 * 44850, far beyond int8/int16.
    sparse = SparseQubo.from_graph(qubo_graph(300, 1.0, 0))
    assert sparse.cost(np.ones(300, dtype=np.int8)) == -300 + 8 * (300 * 299 // 2)


def test_independent_set_costs_minus_its_size() -> None:
    graph = qubo_graph(40, 0.1, 2)
    chosen = []
    for node in graph:  # greedy independent set
        if not any(neighbour in chosen for neighbour in graph.adj[node]):
            chosen.append(node)
    x = np.zeros(40, dtype=np.int64)
    x[chosen] = 1
    assert SparseQubo.from_graph(graph).cost(x) == -len(chosen)


def test_asymmetric_matrix_is_folded() -> None:
    q = np.array([[1, 3, 0], [5, -2, 0], [0, 7, 0]], dtype=np.int16)
    sparse = SparseQubo.from_matrix(q)
    for bits in range(8):
        x = np.array([(bits >> i) & 1 for i in range(3)])
        assert sparse.cost(x) == dense_cost(q, x)


def test_costs_in_blocks_match_single_costs(monkeypatch: pytest.MonkeyPatch) -> None:
    import hilbench.workloads.qubo.cost as cost_module

    monkeypatch.setattr(cost_module, "_COST_BLOCK_ELEMENTS", 50)  # force many small blocks
    sparse = SparseQubo.from_matrix(generate_qubo(50, 0.25, 1))
    xs = np.random.default_rng(0).integers(0, 2, size=(37, 50))
    assert sparse.costs(xs).tolist() == [sparse.cost(x) for x in xs]


def test_bool_samples_accepted() -> None:
    sparse = SparseQubo.from_matrix(generate_qubo(10, 0.25, 0))
    x = np.zeros(10, dtype=bool)
    x[0] = True
    assert sparse.cost(x) == -1


@pytest.mark.parametrize(
    ("x", "message"),
    [
        (np.zeros(9), "shape"),
        (np.zeros((2, 10)), "shape"),
        (np.full(10, 2), "only 0 and 1"),
        (np.full(10, 0.5), "only 0 and 1"),
    ],
)
def test_cost_rejects_bad_samples(x: np.ndarray, message: str) -> None:
    sparse = SparseQubo.from_matrix(generate_qubo(10, 0.25, 0))
    with pytest.raises(ValueError, match=message):
        sparse.cost(x)


def test_from_matrix_rejects_non_square_and_float() -> None:
    with pytest.raises(ValueError, match="square"):
        SparseQubo.from_matrix(np.zeros((2, 3), dtype=np.int8))
    with pytest.raises(ValueError, match="integer"):
        SparseQubo.from_matrix(np.zeros((2, 2)))


@pytest.mark.parametrize(
    ("cost", "target", "gap"),
    [(-10, -10, 0.0), (-9, -10, 0.1), (0, -10, 1.0), (-11, -10, -0.1), (-95, -100, 0.05)],
)
def test_bks_gap(cost: int, target: int, gap: float) -> None:
    assert bks_gap(cost, target) == pytest.approx(gap)


def test_bks_gap_rejects_zero_target() -> None:
    with pytest.raises(ValueError, match="target"):
        bks_gap(-1, 0)
