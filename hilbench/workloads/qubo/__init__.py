"""QUBO maximum-independent-set workloads: the NeuroBench generator, cost checking and targets."""

from hilbench.workloads.qubo.cost import SparseQubo, bks_gap
from hilbench.workloads.qubo.exact import exact_optimum_cost, maximum_independent_set
from hilbench.workloads.qubo.generator import (
    WorkloadError,
    edge_count,
    edges_in_graph,
    generate_qubo,
    matrix_sha256,
    qubo_graph,
    validate_workload,
)
from hilbench.workloads.qubo.tabu import TabuSettings
from hilbench.workloads.qubo.targets import Target, find_target

__all__ = [
    "SparseQubo",
    "TabuSettings",
    "Target",
    "WorkloadError",
    "bks_gap",
    "edge_count",
    "edges_in_graph",
    "exact_optimum_cost",
    "find_target",
    "generate_qubo",
    "matrix_sha256",
    "maximum_independent_set",
    "qubo_graph",
    "validate_workload",
]
