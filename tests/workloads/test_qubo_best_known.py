"""Best-known values: only checked independent sets are recorded, the best one kept, with who
found it; CP-SAT's proven bound never lies above the optimum."""

from __future__ import annotations

import numpy as np
import pytest

from hilbench.workloads.qubo import exact_optimum_cost, qubo_graph
from hilbench.workloads.qubo.best_known import BestKnownStore
from hilbench.workloads.qubo.certify import certify
from hilbench.workloads.qubo.exact import maximum_independent_set


def test_only_a_better_independent_set_replaces_the_best_known(tmp_path):
    store = BestKnownStore(tmp_path / "bk.json")
    graph = qubo_graph(30, 0.1, 4)
    best = maximum_independent_set(graph)
    small = np.zeros(30, dtype=np.uint8)
    small[best[:3]] = 1
    assert store.offer(30, 0.1, 4, small, {"solver": "test", "by": "a"})
    assert store.get(30, 0.1, 4).cost == -3
    full = np.zeros(30, dtype=np.uint8)
    full[best] = 1
    assert store.offer(30, 0.1, 4, full, {"solver": "test", "by": "b"})
    assert not store.offer(30, 0.1, 4, small, {"solver": "test", "by": "c"})  # worse: kept out
    again = BestKnownStore(tmp_path / "bk.json").get(30, 0.1, 4)
    assert again.cost == -len(best) and again.independent_set == best
    assert again.provenance["by"] == "b" and "recorded_at" in again.provenance
    assert BestKnownStore(tmp_path / "bk.json").get(30, 0.1, 5) is None  # another workload


def test_a_state_with_an_edge_inside_is_refused(tmp_path):
    store = BestKnownStore(tmp_path / "bk.json")
    u, v = next(iter(qubo_graph(30, 0.1, 4).edges()))
    state = np.zeros(30, dtype=np.uint8)
    state[[u, v]] = 1
    with pytest.raises(ValueError, match="not an independent set: 1 edges"):
        store.offer(30, 0.1, 4, state, {"solver": "test"})
    assert store.get(30, 0.1, 4) is None


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_cp_sat_certifies_the_exact_optimum_of_small_workloads(seed):
    result = certify(40, 0.1, seed, time_limit_s=20)
    exact = exact_optimum_cost(qubo_graph(40, 0.1, seed))
    assert result.optimal
    assert result.cost_bound == result.best_cost == exact
    assert result.state.sum() == -exact


@pytest.mark.serial  # 0.05 s of CP-SAT: beside another worker it found no solution at all
def test_a_cp_sat_bound_without_proof_still_lies_at_or_below_the_optimum():
    # 0.05 s is too short to prove n=100 optimal; the bound must still not pass the optimum.
    result = certify(100, 0.05, 0, time_limit_s=0.05)
    exact = exact_optimum_cost(qubo_graph(100, 0.05, 0))
    assert result.cost_bound <= exact <= result.best_cost
