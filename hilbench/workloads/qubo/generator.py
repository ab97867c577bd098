"""The NeuroBench QUBO-MIS workload generator, reproduced byte for byte.

A workload is (nodes, density, seed). NeuroBench (system_benchmarks, ``QUBO/mis.py``) draws
``networkx.gnm_random_graph(n, m=int(0.5 * density * n**2), seed=seed)`` and turns its dense
adjacency matrix into ``-1 * eye(n) + 8 / 2 * adjacency`` cast to int8: -1 on the diagonal and
+4 at (u, v) and (v, u) for every edge. We call networkx for the graph (the random draw *is* the
definition, so it must not be re-implemented) and fill the int8 matrix straight from the edge
list, which gives the same bytes without the float64 dense intermediate.
"""

from __future__ import annotations

import hashlib
import math

import networkx as nx
import numpy as np

DIAGONAL_WEIGHT = -1
EDGE_WEIGHT = 4  # Q[u, v] and Q[v, u]; the cost term of an edge is therefore 8 * x_u * x_v


class WorkloadError(ValueError):
    """A workload parameter outside what NeuroBench defines; ``field`` names the parameter."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field} {message}")
        self.field = field


def validate_workload(nodes: int, density: float, seed: int) -> None:
    """Reject workloads NeuroBench does not define, naming the bad value.

    ``random.Random(-s)`` equals ``random.Random(s)``, so negative seeds would silently alias
    positive ones; they are refused rather than quietly accepted.
    """
    if isinstance(nodes, bool) or not isinstance(nodes, int | np.integer):
        raise WorkloadError("nodes", f"must be an integer, got {nodes!r}")
    if nodes < 2:
        raise WorkloadError("nodes", f"must be at least 2, got {nodes}")
    if not isinstance(density, int | float | np.floating) or isinstance(density, bool):
        raise WorkloadError("density", f"must be a number, got {density!r}")
    if not math.isfinite(density) or not 0.0 < density <= 1.0:
        raise WorkloadError("density", f"must be in (0, 1], got {density!r}")
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer):
        raise WorkloadError("seed", f"must be an integer, got {seed!r}")
    if seed < 0:
        raise WorkloadError("seed", f"must be >= 0, got {seed}")


def edge_count(nodes: int, density: float) -> int:
    """Number of edges requested from gnm_random_graph, with NeuroBench's exact float arithmetic.

    The order of operations matters: ``0.5 * density`` is rounded first, then multiplied by the
    integer ``n**2``, then truncated. Any other order can differ by one edge for some inputs.
    """
    return int(0.5 * density * nodes**2)


def edges_in_graph(nodes: int, density: float) -> int:
    """Edges the workload graph really has: gnm_random_graph returns the complete graph when
    the requested count reaches n(n-1)/2 (e.g. density 1.0), so it is capped there."""
    return min(edge_count(nodes, density), nodes * (nodes - 1) // 2)


def qubo_graph(nodes: int, density: float, seed: int) -> nx.Graph:
    """The workload graph, exactly as NeuroBench draws it (nodes labelled 0..n-1)."""
    validate_workload(nodes, density, seed)
    return nx.gnm_random_graph(
        int(nodes), edge_count(int(nodes), float(density)), seed=int(seed), directed=False
    )


def graph_edges(graph: nx.Graph) -> tuple[np.ndarray, np.ndarray]:
    """Edge endpoints as two int64 arrays with u < v, in networkx's iteration order."""
    edges = np.fromiter(
        (node for edge in graph.edges() for node in edge),
        dtype=np.int64,
        count=2 * graph.number_of_edges(),
    ).reshape(-1, 2)
    return edges.min(axis=1), edges.max(axis=1)


def qubo_matrix_from_graph(graph: nx.Graph) -> np.ndarray:
    """Dense int8 QUBO matrix of an MIS graph whose nodes are 0..n-1."""
    n = graph.number_of_nodes()
    if sorted(graph.nodes()) != list(range(n)):
        raise ValueError("graph nodes must be the integers 0..n-1 to form a QUBO matrix")
    q = np.zeros((n, n), dtype=np.int8)
    u, v = graph_edges(graph)
    q[u, v] = EDGE_WEIGHT
    q[v, u] = EDGE_WEIGHT
    q[np.diag_indices(n)] = DIAGONAL_WEIGHT
    return q


def generate_qubo(nodes: int, density: float, seed: int) -> np.ndarray:
    """The NeuroBench QUBO matrix of workload (nodes, density, seed): int8, n x n, C order."""
    return qubo_matrix_from_graph(qubo_graph(nodes, density, seed))


def matrix_sha256(q: np.ndarray) -> str:
    """sha256 of the matrix's int8 bytes in C order: a fingerprint for test vectors and caches."""
    if q.dtype != np.int8:
        raise ValueError(f"expected an int8 QUBO matrix, got dtype {q.dtype}")
    return hashlib.sha256(np.ascontiguousarray(q).tobytes()).hexdigest()
