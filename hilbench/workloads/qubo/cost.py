"""QUBO cost x^T Q x in int64 from a sparse form, in O(nodes + edges) per sample.

The dense int8 matrix is what a system under test receives, but scoring from it costs O(n^2) and
int8 arithmetic overflows; the cost-checking module works on the diagonal plus the upper-triangle
couplings instead, always in int64.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from hilbench.workloads.qubo.generator import DIAGONAL_WEIGHT, EDGE_WEIGHT, graph_edges

if TYPE_CHECKING:
    import networkx as nx  # imported where a graph is made: 0.1-0.4 s of every start

# Samples scored per vectorised block in SparseQubo.costs, bounding memory at rows x edges.
_COST_BLOCK_ELEMENTS = 1 << 24


@dataclass(frozen=True, eq=False)  # arrays: no element-wise __eq__ surprises
class SparseQubo:
    """Sparse QUBO: ``cost(x) = sum_i diag[i] x_i + sum_k weight[k] x_u[k] x_v[k]``.

    ``u < v`` holds for every coupling, and ``weight[k]`` is the full coefficient of the product
    ``x_u x_v`` in the cost, i.e. ``Q[u, v] + Q[v, u]`` (8 for the MIS workloads, whose matrix
    holds 4 on each side).
    """

    diag: np.ndarray
    u: np.ndarray
    v: np.ndarray
    weight: np.ndarray

    def __post_init__(self) -> None:
        for name in ("diag", "u", "v", "weight"):
            array = getattr(self, name)
            if array.ndim != 1 or array.dtype != np.int64:
                raise ValueError(f"SparseQubo.{name} must be a 1-D int64 array")
        if not len(self.u) == len(self.v) == len(self.weight):
            raise ValueError("SparseQubo.u, .v and .weight must have the same length")
        if len(self.u) and (
            self.u.min() < 0 or self.v.max() >= len(self.diag) or np.any(self.u >= self.v)
        ):
            raise ValueError("SparseQubo couplings need 0 <= u < v < nodes")

    @property
    def nodes(self) -> int:
        return len(self.diag)

    @property
    def num_couplings(self) -> int:
        return len(self.u)

    @classmethod
    def from_matrix(cls, q: np.ndarray) -> SparseQubo:
        """Sparse form of any square integer QUBO matrix (asymmetric ones are folded)."""
        q = np.asarray(q)
        if q.ndim != 2 or q.shape[0] != q.shape[1]:
            raise ValueError(f"QUBO matrix must be square, got shape {q.shape}")
        if not np.issubdtype(q.dtype, np.integer):
            raise ValueError(f"QUBO matrix must have an integer dtype, got {q.dtype}")
        # int8 workloads fold into int16 (4 + 4 cannot overflow it): a tenth of the memory of
        # int64 at n = 10 000, where the dense matrix alone is 100 MB.
        wide_dtype = np.int16 if q.dtype.itemsize == 1 else np.int64
        folded = np.triu(q, 1).astype(wide_dtype)
        folded += np.triu(q.T, 1)
        u, v = np.nonzero(folded)
        return cls(
            diag=np.diagonal(q).astype(np.int64),
            u=u.astype(np.int64),
            v=v.astype(np.int64),
            weight=folded[u, v].astype(np.int64),
        )

    @classmethod
    def from_graph(cls, graph: nx.Graph) -> SparseQubo:
        """Sparse MIS QUBO of a graph with nodes 0..n-1, in O(nodes + edges)."""
        n = graph.number_of_nodes()
        if sorted(graph.nodes()) != list(range(n)):
            raise ValueError(f"graph nodes must be the integers 0..{n - 1} to form a QUBO")
        u, v = graph_edges(graph)
        order = np.lexsort((v, u))
        return cls(
            diag=np.full(n, DIAGONAL_WEIGHT, dtype=np.int64),
            u=u[order],
            v=v[order],
            weight=np.full(len(u), 2 * EDGE_WEIGHT, dtype=np.int64),
        )

    def _check_samples(self, x: np.ndarray, ndim: int) -> np.ndarray:
        x = np.asarray(x)
        if x.ndim != ndim or x.shape[-1] != self.nodes:
            want = "(nodes,)" if ndim == 1 else "(samples, nodes)"
            raise ValueError(
                f"samples must have shape {want} with nodes={self.nodes}, got {x.shape}"
            )
        if x.dtype != np.bool_:
            if not (np.issubdtype(x.dtype, np.integer) or np.issubdtype(x.dtype, np.floating)):
                raise ValueError(f"samples must be 0/1 numbers, got dtype {x.dtype}")
            if x.size and not np.all((x == 0) | (x == 1)):
                raise ValueError("samples must contain only 0 and 1")
        return x.astype(np.int64)

    def cost(self, x: np.ndarray) -> int:
        """Cost of one 0/1 assignment, as a Python int computed in int64."""
        xi = self._check_samples(x, ndim=1)
        pairs = xi[self.u] & xi[self.v]
        return int(self.diag @ xi + self.weight @ pairs)

    def costs(self, samples: np.ndarray) -> np.ndarray:
        """int64 costs of many assignments, one per row of a (samples, nodes) 0/1 array."""
        xs = self._check_samples(samples, ndim=2)
        out = xs @ self.diag
        if self.num_couplings == 0:
            return out
        rows_per_block = max(1, _COST_BLOCK_ELEMENTS // self.num_couplings)
        for start in range(0, len(xs), rows_per_block):
            block = xs[start : start + rows_per_block]
            out[start : start + len(block)] += (block[:, self.u] & block[:, self.v]) @ self.weight
        return out


def bks_gap(cost: int, target: int) -> float:
    """BKS-gap ``(c - c_target) / |c_target|``: 0 at the target, positive when worse.

    NeuroBench scores ``abs((c - c_target) / c_target)``. MIS targets are negative, so the bare
    ratio would be *negative* for worse solutions (the trivial cost 0 would score -1 and pass any
    "gap <= 0.1" check). Dividing by ``|c_target|`` equals NeuroBench's score whenever the cost is
    not better than the target, and keeps a negative sign for a solution that beats a Tabu target.
    """
    if target == 0:
        raise ValueError("BKS-gap is undefined for a target cost of 0")
    return (int(cost) - int(target)) / abs(int(target))
