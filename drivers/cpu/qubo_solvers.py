"""D-Wave simulated annealing and tabu search, run for a fixed timeout or until a target gap.

The graph becomes a BQM when the workload is loaded (untimed). The timed region starts just
before the sampler is called and ends after our cost-checking module has evaluated every
returned sample: the cost check is part of the system under test. Each sampler also has a set-up
cost inside its call (about 22 ms at 1000 nodes); it is measured once at load time by a
calibration call and reported separately as ``setup_s``.
"""

from __future__ import annotations

import math
import threading
import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from hilbench.agent.driver import DriverError
from hilbench.workloads.qubo import SparseQubo, bks_gap

SOLVERS = ("sa", "tabu")
MIN_TIMEOUT_S = 1e-3
MAX_TIMEOUT_S = 1e2
# Bound on SA's sample buffer (reads × nodes bytes) so a long timeout cannot exhaust memory.
MAX_SA_BUFFER_BYTES = 200_000_000


def _samplers() -> Any:
    try:
        import dimod
        from dwave import samplers
    except ImportError:
        raise DriverError(
            "the cpu driver needs dwave-samplers: pip install 'hilbench[cpu]'", "missing_sdk"
        ) from None
    return dimod, samplers


@dataclass
class LoadedQubo:
    """A workload ready to solve: our sparse form for cost checks and the sampler's BQM."""

    sparse: SparseQubo
    bqm: Any
    nodes: int
    load_s: float
    setup_s: dict[str, float]  # solver -> set-up seconds measured by a calibration call
    read_s: dict[str, float]  # solver -> seconds per read (SA) measured by the calibration


def load_qubo(matrix: np.ndarray, num_sweeps: int) -> LoadedQubo:
    """Build the BQM from an int8 Q matrix and calibrate each sampler's set-up time."""
    dimod, samplers = _samplers()
    if matrix.ndim != 2 or matrix.shape[0] != matrix.shape[1]:
        raise DriverError(
            f"QUBO matrix must be square, got shape {list(matrix.shape)}", "bad_arguments"
        )
    t0 = time.perf_counter()
    sparse = SparseQubo.from_matrix(matrix)
    n = sparse.nodes
    # x^T Q x: Q[u,v] and Q[v,u] both multiply x_u x_v, so the BQM's coupling is their sum.
    upper = np.triu(matrix.astype(np.int64), 1) + np.tril(matrix.astype(np.int64), -1).T
    rows, cols = np.nonzero(upper)
    bqm = dimod.BinaryQuadraticModel.from_numpy_vectors(
        np.diag(matrix).astype(np.float64),
        (rows, cols, upper[rows, cols].astype(np.float64)),
        0.0,
        dimod.BINARY,
    )
    load_s = time.perf_counter() - t0
    setup_s: dict[str, float] = {}
    read_s: dict[str, float] = {}
    sa = samplers.SimulatedAnnealingSampler()
    t = time.perf_counter()
    result = sa.sample(bqm, num_reads=1, num_sweeps=num_sweeps, seed=0)
    timing = result.info.get("timing", {})
    setup_s["sa"] = timing.get("preprocessing_ns", 0) / 1e9
    read_s["sa"] = max(
        timing.get("sampling_ns", 0) / 1e9, (time.perf_counter() - t) - setup_s["sa"]
    )
    t = time.perf_counter()
    samplers.TabuSampler().sample(bqm, num_reads=1, timeout=1, seed=0)
    setup_s["tabu"] = max(0.0, time.perf_counter() - t - 1e-3)
    return LoadedQubo(sparse, bqm, n, load_s, setup_s, read_s)


def validate_timeout(timeout_s: float) -> float:
    timeout_s = float(timeout_s)
    if not MIN_TIMEOUT_S <= timeout_s <= MAX_TIMEOUT_S:
        raise DriverError(
            f"timeout {timeout_s} s is outside {MIN_TIMEOUT_S}…{MAX_TIMEOUT_S} s", "bad_arguments"
        )
    return timeout_s


def _best(loaded: LoadedQubo, sampleset: Any) -> tuple[int, np.ndarray]:
    """Cost-check every returned sample with our own int64 evaluator; keep the best."""
    samples = np.asarray(sampleset.record.sample, dtype=np.int8)
    order = list(sampleset.variables)
    if order != list(range(loaded.nodes)):
        full = np.zeros((samples.shape[0], loaded.nodes), dtype=np.int8)
        full[:, order] = samples
        samples = full
    costs = loaded.sparse.costs(samples)
    i = int(np.argmin(costs))
    return int(costs[i]), samples[i]


def _sa_until(
    loaded: LoadedQubo,
    deadline: float,
    seed: int,
    num_sweeps: int,
    stop: threading.Event,
    timeout_s: float,
) -> tuple[Any, dict[str, Any]]:
    """Simulated annealing reads until ``deadline``; restarts when a batch of reads ends early.

    SA has no timeout of its own: ``interrupt_function`` is checked between reads. Each batch is
    sized from the calibrated time per read and capped so its sample buffer stays bounded.
    """
    dimod, samplers = _samplers()
    sampler = samplers.SimulatedAnnealingSampler()
    read_s = max(loaded.read_s["sa"], 1e-6)
    cap = max(1, MAX_SA_BUFFER_BYTES // max(loaded.nodes, 1))
    batch = int(min(cap, math.ceil(2 * timeout_s / read_s) + 1))
    results = []
    batches = 0
    while True:
        results.append(
            sampler.sample(
                loaded.bqm,
                num_reads=batch,
                num_sweeps=num_sweeps,
                seed=seed + batches,
                interrupt_function=lambda: stop.is_set() or time.perf_counter() >= deadline,
            )
        )
        batches += 1
        if stop.is_set() or time.perf_counter() >= deadline:
            break
    result = results[0] if len(results) == 1 else dimod.concatenate(results)
    return result, {"num_sweeps": num_sweeps, "batch_reads": batch, "batches": batches}


def solve_fixed_timeout(
    loaded: LoadedQubo,
    solver: str,
    timeout_s: float,
    seed: int,
    num_sweeps: int,
    stop: threading.Event,
) -> dict[str, Any]:
    """Run ``solver`` for ``timeout_s`` of solving time; return the best cost and timings."""
    _, samplers = _samplers()
    timeout_s = validate_timeout(timeout_s)
    t_start = time.perf_counter()
    if solver == "sa":
        result, params = _sa_until(
            loaded, t_start + loaded.setup_s["sa"] + timeout_s, seed, num_sweeps, stop, timeout_s
        )
    elif solver == "tabu":
        timeout_ms = max(1, round(timeout_s * 1000))
        result = samplers.TabuSampler().sample(
            loaded.bqm, num_reads=1, timeout=timeout_ms, seed=seed
        )
        params = {"timeout_ms": timeout_ms, "num_reads": 1}
    else:
        raise DriverError(
            f"unknown solver {solver!r} (known: {', '.join(SOLVERS)})", "bad_arguments"
        )
    t_solved = time.perf_counter()
    cost, best = _best(loaded, result)
    t_end = time.perf_counter()
    return {
        "cost": cost,
        "state": best,
        "set_size": int(best.sum()),
        "reads": len(result),
        "requested_s": timeout_s,
        "solver_s": t_solved - t_start,
        "cost_check_s": t_end - t_solved,
        "setup_s": loaded.setup_s[solver],
        "stopped_early": stop.is_set(),
        "solver_params": params,
    }


def solve_to_target(
    loaded: LoadedQubo,
    solver: str,
    target: int,
    gaps: list[float],
    max_time_s: float,
    seed: int,
    num_sweeps: int,
    stop: threading.Event,
    on_progress: Any = None,
) -> dict[str, Any]:
    """Time to solution: run short solver calls until each gap threshold is reached.

    Returns ``reached``: for each threshold met, the time since the first call (set-up
    included, since every call pays it) and the cost then; thresholds not met before
    ``max_time_s`` are absent. ``state`` is the best state found.
    """
    _, samplers = _samplers()
    pending = sorted({float(g) for g in gaps}, reverse=True)
    reached: list[dict[str, Any]] = []
    best_cost: int | None = None
    best_state: np.ndarray | None = None
    calls = 0
    step_ms = 1
    t_start = time.perf_counter()
    while pending and not stop.is_set():
        elapsed = time.perf_counter() - t_start
        if elapsed >= max_time_s:
            break
        if solver == "sa":
            result = samplers.SimulatedAnnealingSampler().sample(
                loaded.bqm, num_reads=1, num_sweeps=num_sweeps, seed=seed + calls
            )
        elif solver == "tabu":
            result = samplers.TabuSampler().sample(
                loaded.bqm, num_reads=1, timeout=step_ms, seed=seed + calls
            )
            step_ms = min(step_ms * 2, 10_000)
        else:
            raise DriverError(f"unknown solver {solver!r}", "bad_arguments")
        calls += 1
        cost, state = _best(loaded, result)
        if best_cost is None or cost < best_cost:
            best_cost, best_state = cost, state
        t = time.perf_counter() - t_start
        gap = bks_gap(best_cost, target)
        while pending and gap <= pending[0]:
            g = pending.pop(0)
            reached.append({"gap": g, "t_s": t, "cost": best_cost})
            if on_progress is not None:
                on_progress(g, t)
    if best_state is None:  # stopped before the first call: the empty set is all there is
        best_state, best_cost = np.zeros(loaded.nodes, dtype=np.int8), 0
    return {
        "target": target,
        "cost": best_cost,
        "state": best_state,
        "set_size": int(best_state.sum()),
        "calls": calls,
        "requested_s": max_time_s,
        "reached": reached,
        "setup_s": loaded.setup_s[solver],
        "stopped_early": stop.is_set(),
    }
