"""The NeuroBench QUBO-MIS workload generator, reproduced byte for byte.

A workload is (nodes, density, seed). NeuroBench (system_benchmarks, ``QUBO/mis.py``) draws
``networkx.gnm_random_graph(n, m=int(0.5 * density * n**2), seed=seed)`` and turns its dense
adjacency matrix into ``-1 * eye(n) + 8 / 2 * adjacency`` cast to int8: -1 on the diagonal and
+4 at (u, v) and (v, u) for every edge.

The random draw *is* the definition. :func:`gnm_edges` replays it without the Graph object:
gnm_random_graph seeds ``random.Random(seed)`` and draws ``u = choice(nodes)``,
``v = choice(nodes)`` until ``m`` distinct non-loop pairs are found; ``choice`` is
``_randbelow(n)``, i.e. the top ``n.bit_length()`` bits of one 32-bit Mersenne Twister output,
redrawn while >= n. numpy's MT19937, given the same state, yields the same 32-bit outputs in bulk,
so the draw becomes array arithmetic: the edge set is the first ``m`` distinct pairs of that
stream. The recorded hash vectors (``protocols/vectors/qubo_matrices.json``, computed through
networkx) prove the bytes identical; at n = 10 000 and 25 % density this takes seconds where the
Graph took 86 s and 2 GB (``hilbench bench qubo-generator``).
"""

from __future__ import annotations

import hashlib
import math
import random
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import networkx as nx  # imported where a graph is made: 0.1-0.4 s of every start

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
    import networkx as nx

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


_RAW_CHUNK = 1 << 22  # 32-bit outputs drawn per step of gnm_edges (32 MiB as uint64)


def _mt19937_like_python(seed: int) -> np.random.MT19937:
    """numpy's Mersenne Twister in the exact state of ``random.Random(seed)``."""
    state = random.Random(seed).getstate()[1]
    bit_generator = np.random.MT19937()
    bit_generator.state = {
        "bit_generator": "MT19937",
        "state": {"key": np.array(state[:624], dtype=np.uint32), "pos": int(state[624])},
    }
    return bit_generator


def gnm_edges(nodes: int, edges: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """The edge set of ``networkx.gnm_random_graph(nodes, edges, seed)`` as (u, v), u < v,
    sorted; drawn from the same random stream without building a Graph."""
    n, m = int(nodes), int(edges)
    if n < 2 or m <= 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    if m >= n * (n - 1) / 2.0:  # networkx returns the complete graph without drawing
        u, v = np.triu_indices(n, 1)
        return u.astype(np.int64), v.astype(np.int64)
    bits = n.bit_length()
    source = _mt19937_like_python(seed)
    seen = np.zeros(n * n, dtype=bool)  # seen[u * n + v], u < v
    count = 0
    pending = np.zeros(0, dtype=np.int64)  # an odd choice left over from the previous chunk
    # Expected 32-bit draws: coupon collecting m of the M pairs, 2 choices per pair, each choice
    # costing 2**bits / n draws; the first chunk asks for a little more, later ones top up.
    pairs_total = n * (n - 1) / 2.0
    expected = -pairs_total * math.log1p(-m / pairs_total) * 2 * (2**bits / n)
    chunk = int(min(_RAW_CHUNK, expected * 1.05 + 256))
    while count < m:
        raw = source.random_raw(chunk) >> np.uint64(32 - bits)
        picks = np.concatenate([pending, raw[raw < n].astype(np.int64)])
        pairs = len(picks) // 2
        pending = picks[2 * pairs :]
        u, v = picks[0 : 2 * pairs : 2], picks[1 : 2 * pairs : 2]
        keep = u != v
        keys = np.minimum(u[keep], v[keep]) * n + np.maximum(u[keep], v[keep])
        fresh = keys[~seen[keys]]
        seen[fresh] = True
        total = int(np.count_nonzero(seen))
        if total <= m:  # the whole chunk is in: order inside it does not matter
            count = total
            continue
        # The chunk passes m: only its first (m - count) new pairs, in stream order, count.
        seen[fresh] = False
        distinct, first = np.unique(fresh, return_index=True)
        seen[distinct[np.argsort(first)][: m - count]] = True
        count = m
    keys = np.flatnonzero(seen)
    return keys // n, keys % n


def qubo_matrix_from_edges(nodes: int, u: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Dense int8 QUBO matrix of the MIS problem on edges (u, v) over nodes 0..n-1."""
    q = np.zeros((nodes, nodes), dtype=np.int8)
    q[u, v] = EDGE_WEIGHT
    q[v, u] = EDGE_WEIGHT
    q[np.diag_indices(nodes)] = DIAGONAL_WEIGHT
    return q


def workload_edges(nodes: int, density: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Edges (u < v, sorted) of workload (nodes, density, seed) as NeuroBench draws them."""
    validate_workload(nodes, density, seed)
    return gnm_edges(int(nodes), edge_count(int(nodes), float(density)), int(seed))


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
    u, v = workload_edges(nodes, density, seed)
    return qubo_matrix_from_edges(int(nodes), u, v)


def matrix_sha256(q: np.ndarray) -> str:
    """sha256 of the matrix's int8 bytes in C order: a fingerprint for test vectors and caches."""
    if q.dtype != np.int8:
        raise ValueError(f"expected an int8 QUBO matrix, got dtype {q.dtype}")
    return hashlib.sha256(np.ascontiguousarray(q).tobytes()).hexdigest()
