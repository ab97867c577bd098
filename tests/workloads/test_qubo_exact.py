"""The exact MIS solver must agree with exhaustive search and return a valid set."""

from __future__ import annotations

import itertools

import networkx as nx
import numpy as np
import pytest

from hilbench.workloads.qubo import (
    SparseQubo,
    exact_optimum_cost,
    generate_qubo,
    maximum_independent_set,
    qubo_graph,
)
from hilbench.workloads.qubo.exact import is_independent_set


def brute_force_optimum(q: np.ndarray) -> int:
    n = q.shape[0]
    xs = np.array(list(itertools.product((0, 1), repeat=n)), dtype=np.int64)
    return int(SparseQubo.from_matrix(q).costs(xs).min())


@pytest.mark.parametrize("density", [0.05, 0.1, 0.25, 0.5, 1.0])
@pytest.mark.parametrize("seed", range(3))
def test_exact_equals_brute_force(density: float, seed: int) -> None:
    q = generate_qubo(13, density, seed)
    graph = qubo_graph(13, density, seed)
    assert exact_optimum_cost(graph) == brute_force_optimum(q)


@pytest.mark.parametrize("density", [0.01, 0.05, 0.1, 0.25, 1.0])
def test_returned_set_is_independent_and_has_the_optimum_cost(density: float) -> None:
    graph = qubo_graph(49, density, 7)
    chosen = maximum_independent_set(graph)
    assert is_independent_set(graph, chosen)
    x = np.zeros(49, dtype=np.int64)
    x[chosen] = 1
    assert SparseQubo.from_graph(graph).cost(x) == -len(chosen) == exact_optimum_cost(graph)


def test_is_independent_set_detects_an_edge() -> None:
    graph = nx.path_graph(4)
    assert is_independent_set(graph, [0, 2])
    assert not is_independent_set(graph, [0, 1])


def test_edgeless_graph_takes_every_node() -> None:
    assert exact_optimum_cost(nx.empty_graph(30)) == -30
