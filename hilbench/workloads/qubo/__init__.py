"""QUBO maximum-independent-set workloads: the NeuroBench generator, cost checking and targets."""

# Imported on first use: the registry loads this package's plugin (plugin.py) on every
# start, which must not pull in the heavy parts (networkx, the data set reader).
from __future__ import annotations

from hilbench.workloads.lazy import lazy_exports

_LAZY = {
    "SparseQubo": "hilbench.workloads.qubo.cost",
    "bks_gap": "hilbench.workloads.qubo.cost",
    "exact_optimum_cost": "hilbench.workloads.qubo.exact",
    "maximum_independent_set": "hilbench.workloads.qubo.exact",
    "WorkloadError": "hilbench.workloads.qubo.generator",
    "edge_count": "hilbench.workloads.qubo.generator",
    "edges_in_graph": "hilbench.workloads.qubo.generator",
    "generate_qubo": "hilbench.workloads.qubo.generator",
    "matrix_sha256": "hilbench.workloads.qubo.generator",
    "qubo_graph": "hilbench.workloads.qubo.generator",
    "validate_workload": "hilbench.workloads.qubo.generator",
    "TabuSettings": "hilbench.workloads.qubo.tabu",
    "Target": "hilbench.workloads.qubo.targets",
    "find_target": "hilbench.workloads.qubo.targets",
}


__getattr__ = lazy_exports(__name__, _LAZY)

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
