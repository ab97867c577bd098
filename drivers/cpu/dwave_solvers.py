"""D-Wave simulated annealing and tabu search (the paper's CPU baselines), deadline-true.

The samplers' Python front ends rebuild their model, draw initial states and compute a beta
range inside every call (about 22 ms at 1000 nodes, seconds at 5000). Everything that does not
depend on the deadline is done here at load instead: the Ising vectors and beta range for SA,
the dense matrix Tabu's C++ core takes, and a calibration of each core's time per sweep or
set-up. The timed call then runs only the compiled cores of dwave-samplers.

What the libraries allow, and what cannot be kept:
- SA stops only between reads, and its core builds neighbour lists at the start of every call
  (O(edges): ~80 ms at 2500 nodes and 5 % density). A read's sweeps are sized from the measured
  time per sweep so that one read fits the time left after that set-up (at most
  ``num_sweeps``); reads repeat, in the same call, while another is predicted to fit. When the
  set-up plus one sweep does not fit, the run overruns, and ``solver_params.fits`` says so.
- Tabu takes a whole-millisecond timeout per read, and its core has an O(n^2) set-up of its own
  inside that call. The timeout is the time left minus the calibrated set-up, rounded down; a
  deadline shorter than set-up + 1 ms cannot be kept and is reported as an overrun.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from hilbench.agent.driver import DriverError
from hilbench.clock import now
from hilbench.workloads.qubo import SparseQubo
from hilbench_drivers.cpu.solver_run import SolverRun

_MARGIN_S = 100e-6  # Python overhead between the last check of the clock and the return
MAX_SA_READS = 100_000  # bounds SA's sample buffer (reads x nodes bytes) at long timeouts


def _cores() -> tuple[Any, Any, Any]:
    try:
        import dimod
        from dwave.samplers.sa.sampler import default_beta_range
        from dwave.samplers.sa.simulated_annealing import simulated_annealing
        from dwave.samplers.tabu import TabuSearch
    except ImportError:
        raise DriverError(
            "the cpu driver needs dwave-samplers: pip install 'hilbench[cpu]'", "missing_sdk"
        ) from None
    return dimod, (simulated_annealing, default_beta_range), TabuSearch


def _bqm(sparse: SparseQubo) -> Any:
    dimod, _, _ = _cores()
    return dimod.BinaryQuadraticModel.from_numpy_vectors(
        sparse.diag.astype(np.float64),
        (sparse.u, sparse.v, sparse.weight.astype(np.float64)),
        0.0,
        dimod.BINARY,
    )


def _check_time(sparse: SparseQubo) -> float:
    x = np.zeros(sparse.nodes, dtype=np.int8)
    sparse.cost(x)
    t = now()
    sparse.cost(x)
    return now() - t


@dataclass
class SaSolver:
    """SA's compiled core on precomputed Ising vectors, reads sized to the deadline."""

    sparse: SparseQubo
    max_sweeps: int
    h: np.ndarray = field(init=False)
    irow: np.ndarray = field(init=False)
    icol: np.ndarray = field(init=False)
    j: np.ndarray = field(init=False)
    beta_range: tuple[float, float] = field(init=False)
    call_setup_s: float = field(init=False)  # the core's own set-up per call, measured
    sweep_s: float = field(init=False)  # measured time per sweep
    check_s: float = field(init=False)

    def __post_init__(self) -> None:
        _, (_, default_beta_range), _ = _cores()
        ising = _bqm(self.sparse).spin
        n = self.sparse.nodes
        self.h, (self.irow, self.icol, self.j), _ = ising.to_numpy_vectors(
            variable_order=range(n)
        )
        self.beta_range = tuple(float(b) for b in default_beta_range(ising))
        one = min(self._timed(1, 1, s) for s in range(3))
        many = min(self._timed(1, 51, s) for s in range(2))
        self.sweep_s = max((many - one) / 50, 1e-9)
        self.call_setup_s = max(one - self.sweep_s, 0.0)
        self.check_s = _check_time(self.sparse)

    def _call(self, reads: int, sweeps: int, seed: int, interrupt: Any) -> tuple[Any, Any]:
        _, (simulated_annealing, _), _ = _cores()
        rng = np.random.default_rng(seed)
        initial = (rng.integers(0, 2, size=(reads, len(self.h)), dtype=np.int8) * 2 - 1).astype(
            np.int8
        )
        schedule = (
            np.geomspace(*self.beta_range, num=sweeps)
            if sweeps > 1
            else np.array([self.beta_range[1]])
        )
        return simulated_annealing(
            reads, self.h, self.irow, self.icol, self.j, 1, schedule, seed % 2**63 + 1,
            np.ascontiguousarray(initial), False, "Metropolis", interrupt,
        )

    def _timed(self, reads: int, sweeps: int, seed: int) -> float:
        t = now()
        self._call(reads, sweeps, seed, None)
        return now() - t

    def sweeps_for(self, budget_s: float) -> int:
        """Sweeps of one read that fit ``budget_s`` after the call's set-up (1…max_sweeps)."""
        fit = math.floor((budget_s - self.call_setup_s) / self.sweep_s)
        return int(min(self.max_sweeps, max(1, fit)))

    def run(self, seed: int, deadline: float, stop: Any, on_improve: Any = None) -> SolverRun:
        """Fixed timeout: reads repeat while the next one is predicted to fit (SA's interrupt
        function is asked between reads), in one call unless its reads end early. Time to
        solution (``on_improve``): calls of doubling read counts, each checked, since progress
        is only seen between calls."""
        t0 = now()
        end = deadline - self.check_s - _MARGIN_S
        sweeps = self.sweeps_for(end - t0)
        read_s = sweeps * self.sweep_s
        cap = max(1, min(MAX_SA_READS, math.ceil((end - t0) / read_s) + 1))
        best_state: np.ndarray | None = None
        best_cost: int | None = None
        reads = calls = 0
        batch = cap if on_improve is None else 1
        while True:
            spins, energies = self._call(
                batch,
                sweeps,
                seed * 1_000_003 + calls,
                lambda: stop.is_set() or now() + read_s > end,
            )
            calls += 1
            reads += len(energies)
            i = int(np.argmin(energies))
            state = ((spins[i] + 1) // 2).astype(np.uint8)
            cost = self.sparse.cost(state)
            if best_cost is None or cost < best_cost:
                best_state, best_cost = state, cost
                if on_improve is not None and on_improve(cost):
                    break
            if stop.is_set() or now() + self.call_setup_s + read_s > end:
                break
            batch = min(2 * batch, cap)
        return checked_answer(self.sparse, best_state, reads, t0, {
                "num_sweeps": sweeps,
                "max_sweeps": self.max_sweeps,
                "calls": calls,
                "beta_range": list(self.beta_range),
                "sweep_s": self.sweep_s,
                "core_setup_s": self.call_setup_s,
                "fits": self.call_setup_s + self.sweep_s <= end - t0,
        })


@dataclass
class TabuSolver:
    """Tabu's compiled core on a dense matrix built at load; timeout from the time left."""

    sparse: SparseQubo
    matrix: np.ndarray = field(init=False)
    tenure: int = field(init=False)
    setup_s: float = field(init=False)  # the core's own set-up inside a call, measured
    check_s: float = field(init=False)

    def __post_init__(self) -> None:
        n = self.sparse.nodes
        half = np.zeros((n, n), dtype=np.float64)
        half[np.diag_indices(n)] = self.sparse.diag
        half[self.sparse.u, self.sparse.v] = self.sparse.weight
        half *= 0.5
        self.matrix = half + half.T  # the form TabuSampler hands its core
        self.tenure = min(20, n // 4)
        self.setup_s = max(0.0, min(self._timed(1, s) for s in range(2)) - 1e-3)
        self.check_s = _check_time(self.sparse)

    def _read(self, timeout_ms: int, seed: int) -> np.ndarray:
        _, _, tabu_search = _cores()
        rng = np.random.default_rng(seed)
        initial = rng.integers(0, 2, size=self.sparse.nodes, dtype=np.int8)
        search = tabu_search(
            self.matrix, initial, self.tenure, timeout_ms, 1_000_000, seed % 2**32,
            None, None, None, None,
        )
        return np.asarray(search.bestSolution(), dtype=np.uint8)

    def _timed(self, timeout_ms: int, seed: int) -> float:
        t = now()
        self._read(timeout_ms, seed)
        return now() - t

    def run(self, seed: int, deadline: float, stop: Any, on_improve: Any = None) -> SolverRun:
        """One read with the whole budget; for time to solution (``on_improve``), reads of
        doubling timeout so that progress is seen between them."""
        t0 = now()
        end = deadline - self.check_s - _MARGIN_S
        best_state: np.ndarray | None = None
        best_cost: int | None = None
        reads, step_ms, timeouts = 0, 1, []
        while True:
            left_ms = math.floor((end - now() - self.setup_s) * 1000)
            timeout_ms = max(1, left_ms if on_improve is None else min(step_ms, left_ms))
            state = self._read(timeout_ms, seed * 1_000_003 + reads)
            reads += 1
            timeouts.append(timeout_ms)
            cost = self.sparse.cost(state)
            if best_cost is None or cost < best_cost:
                best_state, best_cost = state, cost
                if on_improve is not None and on_improve(cost):
                    break
            step_ms *= 2
            if on_improve is None or stop.is_set():
                break
            if end - now() < self.setup_s + 1e-3:
                break
        return checked_answer(self.sparse, best_state, reads, t0, {
                "timeout_ms": timeouts if len(timeouts) > 1 else timeouts[0],
                "tenure": self.tenure,
                "core_setup_s": self.setup_s,
                "fits": self.setup_s + 1e-3 <= end - t0,
        })


def checked_answer(
    sparse: Any, state: np.ndarray | None, reads: int, t0: float, params: dict[str, Any]
) -> SolverRun:
    """The best state with its cost computed inside the timed region (the cost check is part of
    the system under test), and the solver's own time apart from the check's."""
    t_solved = now()
    assert state is not None
    cost = sparse.cost(state)
    return SolverRun(cost=cost, state=state, solver_s=t_solved - t0,
                     cost_check_s=now() - t_solved, solver_params=params,
                     detail={"reads": reads})

