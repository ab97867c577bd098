"""QUBO solving on the CPU: D-Wave SA and Tabu (:mod:`.dwave_solvers`) and the `anytime` MIS
solver (:mod:`.anytime`), for a fixed timeout or until target gaps are reached.

Load builds each solver's model and calibrates it (untimed). The timed region is the solver's
run plus our cost check of the state it returns: the cost check is part of the system under
test. Each solver reserves the measured time of that check before the deadline.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from hilbench.agent.driver import DriverError
from hilbench.clock import now
from hilbench.workloads.qubo import SparseQubo, bks_gap
from hilbench.workloads.qubo.contract import Reached
from hilbench_drivers.cpu.solver_run import SolverRun

SOLVERS = ("sa", "tabu", "anytime")
MIN_TIMEOUT_S = 1e-3
MAX_TIMEOUT_S = 1e2


@dataclass
class Solve:
    """One scenario's run: the solver's run, what was asked of it and what came of it."""

    run: SolverRun
    requested_s: float
    set_size: int
    setup_s: float
    stopped_early: bool
    target: int | None = None
    reached: list[Reached] | None = None  # time to solution: each gap met, in order


@dataclass
class LoadedQubo:
    """A workload ready to solve: our sparse form for cost checks and each prepared solver."""

    sparse: SparseQubo
    nodes: int
    load_s: float
    solvers: dict[str, Any] = field(default_factory=dict)
    setup_s: dict[str, float] = field(default_factory=dict)  # solver -> load-time preparation


def _prepare(name: str, sparse: SparseQubo, num_sweeps: int) -> Any:
    if name == "sa":
        from hilbench_drivers.cpu.dwave_solvers import SaSolver

        return SaSolver(sparse, num_sweeps)
    if name == "tabu":
        from hilbench_drivers.cpu.dwave_solvers import TabuSolver

        return TabuSolver(sparse)
    if name == "anytime":
        from hilbench_drivers.cpu.anytime import AnytimeMis

        return AnytimeMis.load(sparse)
    raise DriverError(f"unknown solver {name!r} (known: {', '.join(SOLVERS)})", "bad_arguments")


def load_qubo(matrix: np.ndarray, num_sweeps: int, solvers: list[str] | None = None) -> LoadedQubo:
    """Sparse form of an int8 Q matrix plus the named solvers (default: all), each prepared and
    calibrated now so that nothing of it runs inside the timed region."""
    if matrix.ndim != 2 or matrix.shape[0] != matrix.shape[1]:
        raise DriverError(
            f"QUBO matrix must be square, got shape {list(matrix.shape)}", "bad_arguments"
        )
    t0 = now()
    sparse = SparseQubo.from_matrix(matrix)
    loaded = LoadedQubo(sparse, sparse.nodes, now() - t0)
    for name in solvers or SOLVERS:
        t = now()
        loaded.solvers[name] = _prepare(name, sparse, num_sweeps)
        loaded.setup_s[name] = now() - t
    return loaded


def known_limits() -> dict[str, Any]:
    """What this host can hold: Tabu's dense float64 matrix (8 n^2 bytes) must fit in memory."""
    import psutil

    memory = psutil.virtual_memory().total
    return {
        "max_bytes": memory,
        "max_nodes": {"tabu": int((memory / 2 / 8) ** 0.5)},
        "note": "Tabu needs 8 n^2 bytes (dense matrix); SA and anytime need O(n + edges)",
    }


def _solver(loaded: LoadedQubo, name: str) -> Any:
    if name not in SOLVERS:
        raise DriverError(
            f"unknown solver {name!r} (known: {', '.join(SOLVERS)})", "bad_arguments"
        )
    if name not in loaded.solvers:
        raise DriverError(
            f"solver {name!r} was not prepared at load (loaded: {', '.join(loaded.solvers)})",
            "not_loaded",
        )
    return loaded.solvers[name]


def solve_fixed_timeout(
    loaded: LoadedQubo,
    solver: str,
    timeout_s: float,
    seed: int,
    stop: threading.Event,
    t_start: float,
) -> Solve:
    """Run ``solver`` until ``t_start + timeout_s`` (hilbench.clock.now), cost check included."""
    run = _solver(loaded, solver).run(seed, t_start + timeout_s, stop)
    return Solve(run, requested_s=timeout_s, set_size=int(run.state.sum()),
                 setup_s=loaded.setup_s[solver], stopped_early=stop.is_set())


def solve_to_target(
    loaded: LoadedQubo,
    solver: str,
    target: int,
    gaps: list[float],
    max_time_s: float,
    seed: int,
    stop: threading.Event,
    t_start: float,
) -> Solve:
    """Time to solution: solve until every gap threshold is reached or ``max_time_s`` passes.

    ``reached`` lists, for each threshold met, the seconds from ``t_start`` to the moment the
    solver's checked best cost first met it.
    """
    pending = sorted({float(g) for g in gaps}, reverse=True)
    reached: list[Reached] = []

    def on_improve(cost: int) -> bool:
        t = now() - t_start
        gap = bks_gap(cost, target)
        while pending and gap <= pending[0]:
            reached.append(Reached(gap=pending.pop(0), t_s=t, cost=int(cost)))
        return not pending

    check: Callable[[int], bool] = on_improve
    run = _solver(loaded, solver).run(seed, t_start + max_time_s, stop, check)
    return Solve(run, requested_s=max_time_s, set_size=int(run.state.sum()),
                 setup_s=loaded.setup_s[solver], stopped_early=stop.is_set(), target=target,
                 reached=reached)
