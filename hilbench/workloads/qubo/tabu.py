"""Best-known targets for untabulated large workloads: D-Wave Tabu, as NeuroBench ran it.

NeuroBench's ``find_optimal_costs.py`` calls ``TabuSampler().sample(bqm, timeout=None,
num_reads=100, num_restarts=50)``. ``timeout`` is milliseconds *per read*; ``None`` disables it,
so each read stops after its restarts and a fixed seed gives the same answer on every machine
speed. We add that seed (NeuroBench's was unseeded) and record it with the result.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass
from importlib import metadata

import numpy as np

from hilbench.workloads.qubo.cost import SparseQubo


@dataclass(frozen=True)
class TabuSettings:
    """Tabu parameters; the defaults are the published ones and define official targets."""

    num_reads: int = 100
    num_restarts: int = 50
    timeout_ms: int | None = None  # per read; None = run every restart, deterministic

    def __post_init__(self) -> None:
        if self.num_reads < 1:
            raise ValueError(f"Tabu num_reads must be >= 1, got {self.num_reads}")
        if self.num_restarts < 0:
            raise ValueError(f"Tabu num_restarts must be >= 0, got {self.num_restarts}")
        if self.timeout_ms is not None and self.timeout_ms <= 0:
            raise ValueError(f"Tabu timeout_ms must be positive or None, got {self.timeout_ms}")

    @property
    def is_published(self) -> bool:
        return self == TabuSettings()


@dataclass(frozen=True)
class TabuResult:
    cost: int
    best_sample: np.ndarray  # 0/1 int8 vector of the best read
    independent: bool  # whether the best sample is an independent set
    elapsed_s: float

    def detail(self, settings: TabuSettings, seed: int) -> dict:
        return {
            **asdict(settings),
            "sampler_seed": seed,
            "published_parameters": settings.is_published,
            "is_independent_set": self.independent,
            "set_size": int(self.best_sample.sum()),
            "elapsed_s": round(self.elapsed_s, 3),
            "dwave_samplers": installed_version("dwave-samplers"),
        }


def installed_version(distribution: str) -> str:
    """Version of an installed distribution, or "not installed" (recorded with targets)."""
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return "not installed"


def run_tabu(qubo: SparseQubo, settings: TabuSettings, seed: int) -> TabuResult:
    """Run the D-Wave Tabu sampler on ``qubo`` and score its best read with our own int64 cost."""
    try:
        import dimod
        from dwave.samplers import TabuSampler
    except ImportError as exc:
        raise RuntimeError(
            "a Tabu target needs dwave-samplers: pip install 'hilbench[cpu]' "
            f"(import failed: {exc})"
        ) from exc
    if not 0 <= seed < 2**32:
        raise ValueError(f"Tabu seed must be a 32-bit unsigned integer, got {seed}")
    bqm = dimod.BinaryQuadraticModel.from_numpy_vectors(
        qubo.diag, (qubo.u, qubo.v, qubo.weight), 0.0, dimod.BINARY
    )
    started = time.monotonic()
    sampleset = TabuSampler().sample(
        bqm,
        num_reads=settings.num_reads,
        num_restarts=settings.num_restarts,
        timeout=settings.timeout_ms,
        seed=seed,
    )
    elapsed = time.monotonic() - started
    best = sampleset.first.sample
    x = np.array([best[node] for node in range(qubo.nodes)], dtype=np.int8)
    cost = qubo.cost(x)
    if cost != round(float(sampleset.first.energy)):
        raise RuntimeError(
            f"Tabu energy {sampleset.first.energy} disagrees with our cost {cost}: "
            "the BQM was built wrongly"
        )
    independent = not np.any(x[qubo.u] & x[qubo.v])
    return TabuResult(cost=cost, best_sample=x, independent=bool(independent), elapsed_s=elapsed)
