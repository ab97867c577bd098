"""MaxCut on a CPU: one-flip local search from random partitions (the driver's solver), the
exact optimum by trying every partition (n ≤ :data:`EXACT_MAX_NODES`), and the graphs, which are
the QUBO workloads' (NeuroBench's ``gnm_random_graph`` for size, density and seed)."""

from __future__ import annotations

import threading
from dataclasses import dataclass

import numpy as np

from hilbench.workloads.qubo.generator import workload_edges

EXACT_MAX_NODES = 20  # 2^19 partitions: ~0.3 s
REFERENCE_RESTARTS = 128
REFERENCE_SEED = 20_241_129


def graph_edges(nodes: int, density: float, seed: int) -> np.ndarray:
    """The QUBO workload graph (nodes, density, seed) as int32 edges (u, v), u < v."""
    u, v = workload_edges(nodes, density, seed)
    return np.ascontiguousarray(np.stack([u, v], axis=1), dtype=np.int32).reshape(-1, 2)


def cut_size(edges: np.ndarray, side: np.ndarray) -> int:
    """Edges whose ends lie on different sides of the partition ``side`` (0/1 per node)."""
    if len(edges) == 0:
        return 0
    return int(np.count_nonzero(side[edges[:, 0]] != side[edges[:, 1]]))


def _adjacency(nodes: int, edges: np.ndarray) -> np.ndarray:
    adj = np.zeros((nodes, nodes), dtype=np.int32)
    adj[edges[:, 0], edges[:, 1]] = 1
    adj[edges[:, 1], edges[:, 0]] = 1
    return adj


def _descend(adj: np.ndarray, spins: np.ndarray) -> np.ndarray:
    """Flip the node whose flip gains most until no flip gains (a local optimum). Flipping
    node i changes the cut by s_i (A s)_i."""
    field = adj @ spins
    while True:
        gains = spins * field
        best = int(np.argmax(gains))
        if gains[best] <= 0:
            return spins
        spins[best] = -spins[best]
        field += 2 * spins[best] * adj[:, best]


@dataclass(frozen=True)
class Cut:
    side: np.ndarray  # uint8, 0/1 per node
    cut: int
    restarts_done: int


def local_search(nodes: int, edges: np.ndarray, restarts: int, seed: int,
                 stop: threading.Event | None = None) -> Cut:
    """The best of ``restarts`` descents from random partitions (stops early when ``stop``
    is set, after at least one)."""
    adj = _adjacency(nodes, edges)
    rng = np.random.default_rng(seed)
    best: np.ndarray | None = None
    best_cut = -1
    done = 0
    for _ in range(restarts):
        if done and stop is not None and stop.is_set():
            break
        spins = _descend(adj, rng.choice(np.array([-1, 1], dtype=np.int32), size=nodes))
        side = (spins > 0).astype(np.uint8)
        found = cut_size(edges, side)
        done += 1
        if found > best_cut:
            best, best_cut = side, found
    assert best is not None
    return Cut(best, best_cut, done)


def exact_max_cut(nodes: int, edges: np.ndarray) -> int:
    """The largest cut, every partition tried (node n-1 fixed on side 0: a cut and its mirror
    are the same)."""
    if nodes > EXACT_MAX_NODES:
        raise ValueError(f"exact MaxCut tries 2^(n-1) partitions: n ≤ {EXACT_MAX_NODES}")
    k = np.arange(1 << (nodes - 1), dtype=np.int64)
    cut = np.zeros(k.shape, dtype=np.int32)
    for u, v in edges:
        cut += ((k >> int(u)) ^ (k >> int(v))) & 1
    return int(cut.max()) if len(cut) else 0


@dataclass(frozen=True)
class Target:
    """The cut a run is scored against, and how it was found."""

    cut: int
    source: str  # "exact" | "reference"
    detail: str


def find_target(nodes: int, density: float, seed: int) -> Target:
    """Exact for n ≤ 20; above, the best of :data:`REFERENCE_RESTARTS` local-search restarts
    (seed :data:`REFERENCE_SEED`): a reference a solver may beat (its ratio then passes 1)."""
    edges = graph_edges(nodes, density, seed)
    if nodes <= EXACT_MAX_NODES:
        return Target(exact_max_cut(nodes, edges), "exact",
                      f"every one of the 2^{nodes - 1} partitions tried")
    found = local_search(nodes, edges, REFERENCE_RESTARTS, REFERENCE_SEED)
    return Target(found.cut, "reference",
                  f"best of {REFERENCE_RESTARTS} local-search restarts, seed "
                  f"{REFERENCE_SEED} (a lower bound on the optimum)")
