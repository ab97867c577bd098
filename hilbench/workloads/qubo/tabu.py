"""Best-known targets for untabulated large workloads: D-Wave Tabu, as NeuroBench ran it.

NeuroBench's ``find_optimal_costs.py`` calls ``TabuSampler().sample(bqm, timeout=None,
num_reads=100, num_restarts=50)``. ``timeout`` is milliseconds *per read*; ``None`` disables it,
so each read stops after its restarts and a fixed seed gives the same answer on every machine
speed. We add that seed (NeuroBench's was unseeded) and record it with the result.
"""

from __future__ import annotations

import functools
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
    # Wall-clock budget for all reads (None: none). Reads run one by one and stop when it is
    # spent; how many ran is recorded, and a target cut short is not the published definition.
    time_budget_s: float | None = None

    def __post_init__(self) -> None:
        if self.num_reads < 1:
            raise ValueError(f"Tabu num_reads must be >= 1, got {self.num_reads}")
        if self.num_restarts < 0:
            raise ValueError(f"Tabu num_restarts must be >= 0, got {self.num_restarts}")
        if self.timeout_ms is not None and self.timeout_ms <= 0:
            raise ValueError(f"Tabu timeout_ms must be positive or None, got {self.timeout_ms}")
        if self.time_budget_s is not None and not self.time_budget_s > 0:
            raise ValueError(f"Tabu time_budget_s must be positive, got {self.time_budget_s}")

    @property
    def is_published(self) -> bool:
        return self == TabuSettings()


@dataclass(frozen=True)
class TabuResult:
    cost: int
    best_sample: np.ndarray  # 0/1 int8 vector of the best read
    independent: bool  # whether the best sample is an independent set
    elapsed_s: float
    reads_done: int | None = None  # under a time budget: reads that ran before it was spent

    def detail(self, settings: TabuSettings, seed: int) -> dict:
        return {
            **asdict(settings),
            "sampler_seed": seed,
            "published_parameters": settings.is_published,
            "is_independent_set": self.independent,
            "set_size": int(self.best_sample.sum()),
            "elapsed_s": round(self.elapsed_s, 3),
            "reads_done": settings.num_reads if self.reads_done is None else self.reads_done,
            "budget_exhausted": self.reads_done is not None
            and self.reads_done < settings.num_reads,
            "dwave_samplers": installed_version("dwave-samplers"),
        }


@functools.cache
def installed_version(distribution: str) -> str:
    """Version of an installed distribution, or "not installed" (recorded with targets).

    Looked up once per process: every unit records it, and each lookup walks ``sys.path``,
    caching a listing of every folder on it whose mtime changed since (up to 128 per folder),
    which made the orchestrator's memory and time grow run by run."""
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
    if settings.time_budget_s is not None:
        return _run_tabu_budgeted(qubo, settings, seed)
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


def _run_tabu_budgeted(qubo: SparseQubo, settings: TabuSettings, seed: int) -> TabuResult:
    """Reads one at a time on Tabu's compiled core, each capped by the budget left.

    The dense matrix the core needs is built once (TabuSampler rebuilds it per call: 3 copies
    of 8 n² bytes), read ``i`` uses seed ``seed + i``.
    """
    from dwave.samplers.tabu import TabuSearch

    assert settings.time_budget_s is not None
    n = qubo.nodes
    started = time.monotonic()
    matrix = np.zeros((n, n), dtype=np.float64)
    matrix[np.diag_indices(n)] = qubo.diag
    matrix[qubo.u, qubo.v] = 0.5 * qubo.weight
    matrix[qubo.v, qubo.u] = 0.5 * qubo.weight
    best: np.ndarray | None = None
    best_cost = 0
    reads = 0
    while reads < settings.num_reads:
        left_ms = int((settings.time_budget_s - (time.monotonic() - started)) * 1000)
        if left_ms < 1:
            break
        timeout = left_ms if settings.timeout_ms is None else min(left_ms, settings.timeout_ms)
        rng = np.random.default_rng(seed + reads)
        search = TabuSearch(
            matrix, rng.integers(0, 2, n, dtype=np.int8), min(20, n // 4), timeout,
            settings.num_restarts, (seed + reads) % 2**32, None, None, None, None,
        )
        x = np.asarray(search.bestSolution(), dtype=np.int8)
        reads += 1
        cost = qubo.cost(x)
        if best is None or cost < best_cost:
            best, best_cost = x, cost
    if best is None:
        raise RuntimeError(
            f"the Tabu time budget of {settings.time_budget_s} s ran out before a read"
        )
    independent = not np.any(best[qubo.u] & best[qubo.v])
    return TabuResult(
        cost=best_cost,
        best_sample=best,
        independent=bool(independent),
        elapsed_s=time.monotonic() - started,
        reads_done=reads,
    )
