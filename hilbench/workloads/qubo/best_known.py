"""Best-known QUBO costs: the best feasible answer any solver here has found, with provenance.

The published table stays the official target (BKS-gap is defined against it); where a solver
has since found a better independent set, users should know how far that target is from the
best known. Every entry holds the independent set itself, so anyone can re-check it, and says
who found it and how (solver, budget, seed, hilbench version, time). An answer is only recorded
after it has been checked against the workload: independent, and of the claimed cost.

One JSON file, by default ``<cache dir>/hilbench/qubo_best_known.json`` (``HILBENCH_BEST_KNOWN``
overrides), written atomically like the target cache.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from hilbench import __version__
from hilbench.workloads.qubo.generator import edge_count, workload_edges
from hilbench.workloads.qubo.target_cache import TargetCache, default_cache_path

FILE_NAME = "qubo_best_known.json"


def default_path() -> Path:
    override = os.environ.get("HILBENCH_BEST_KNOWN")
    return Path(override) if override else default_cache_path().with_name(FILE_NAME)


@dataclass(frozen=True)
class BestKnown:
    cost: int
    provenance: dict[str, Any]
    independent_set: list[int]


def _key(nodes: int, density: float, seed: int) -> str:
    return f"n={nodes};edges={edge_count(nodes, density)};seed={seed}"


class BestKnownStore:
    """Read and improve the best-known file."""

    def __init__(self, path: Path | None = None) -> None:
        self._file = TargetCache(path if path is not None else default_path())

    @property
    def path(self) -> Path:
        return self._file.path

    def get(self, nodes: int, density: float, seed: int) -> BestKnown | None:
        entry = self._file.get(_key(nodes, density, seed))
        if entry is None:
            return None
        return BestKnown(entry["cost"], entry["detail"], list(entry.get("independent_set", [])))

    def offer(
        self,
        nodes: int,
        density: float,
        seed: int,
        state: np.ndarray,
        provenance: dict[str, Any],
    ) -> bool:
        """Record ``state`` if it is an independent set better than the best known; True if so.

        Raises ValueError for a state that is not an independent set of the workload.
        """
        x = np.asarray(state).astype(bool)
        if x.shape != (nodes,):
            raise ValueError(f"state must have shape ({nodes},), got {x.shape}")
        u, v = workload_edges(nodes, density, seed)
        violated = int(np.count_nonzero(x[u] & x[v]))
        if violated:
            raise ValueError(f"not an independent set: {violated} edges inside it")
        cost = -int(x.sum())
        current = self.get(nodes, density, seed)
        if current is not None and current.cost <= cost:
            return False
        self._file.put(
            _key(nodes, density, seed),
            {
                "cost": cost,
                "detail": {
                    **provenance,
                    "hilbench": __version__,
                    "recorded_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                },
                "independent_set": np.flatnonzero(x).tolist(),
            },
        )
        return True
