"""The `anytime` solver: a maximum-independent-set heuristic that keeps any deadline from 1 ms.

What and why. The QUBO workloads are MIS problems, and the MIS literature's best practical
local search is ARW's iterated local search (Andrade, Resende & Werneck, J. Heuristics 2012;
the local search inside KaMIS): start from a greedy independent set, improve it with
(1,2)-swaps, then repeatedly perturb (force outside vertices in, their set neighbours out) and
search again, never accepting a smaller set. Every state it ever holds is an independent set,
so it is feasible from its first microseconds, and a step lasts microseconds, so it can stop
almost exactly at a deadline. KaMIS's reductions pay off on sparse real-world graphs; on these
uniform random graphs few vertices reduce, so they are left out.

Implementation: numba kernels (:mod:`.mis_kernels`) over CSR adjacency, compiled and warmed up at
load. numba has no clock, so Python calls the ILS in chunks whose length is sized from the
measured time per step to stay within a quarter of the time left; the last chunks are single
steps. What is reserved at the end is the measured time of the cost check.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from hilbench.agent.driver import DriverError
from hilbench.clock import now
from hilbench.workloads.qubo import SparseQubo
from hilbench_drivers.cpu.solver_run import SolverRun

# Safety margin before the deadline on top of the measured cost-check time (Python overhead).
_MARGIN_S = 60e-6
_TTS_CHUNK_S = 1e-3


def _kernels() -> Any:
    try:
        from hilbench_drivers.cpu import mis_kernels
    except ImportError:
        raise DriverError(
            "the anytime solver needs numba: pip install 'hilbench[cpu]'", "missing_sdk"
        ) from None
    return mis_kernels


@dataclass
class AnytimeMis:
    """One loaded MIS workload with its work arrays, ready for deadline-bound runs."""

    indptr: np.ndarray
    indices: np.ndarray
    weights: np.ndarray
    diag: np.ndarray
    check_s: float  # measured time of one cost check, reserved before the deadline

    @classmethod
    def load(cls, sparse: SparseQubo) -> AnytimeMis:
        """CSR adjacency from the sparse QUBO; refuses a QUBO that is not an MIS penalty form."""
        if sparse.nodes and not np.all(sparse.diag == -1):
            raise DriverError("anytime solves MIS QUBOs: the diagonal must be -1", "bad_arguments")
        if sparse.num_couplings and sparse.weight.min() <= 1:
            raise DriverError(
                "anytime solves MIS QUBOs: every coupling must penalise (weight > 1)",
                "bad_arguments",
            )
        n = sparse.nodes
        rows = np.concatenate([sparse.u, sparse.v])
        cols = np.concatenate([sparse.v, sparse.u])
        w = np.concatenate([sparse.weight, sparse.weight])
        order = np.argsort(rows, kind="stable")
        indptr = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(np.bincount(rows, minlength=n), out=indptr[1:])
        solver = cls(indptr, cols[order].copy(), w[order].copy(), sparse.diag.copy(), 0.0)
        solver._allocate()
        solver._warm_up()
        return solver

    def _allocate(self) -> None:
        n = len(self.diag)
        degrees = np.diff(self.indptr)
        max_degree = int(degrees.max()) if n else 0
        self.in_set = np.zeros(n, dtype=np.uint8)
        self.best = np.zeros(n, dtype=np.uint8)
        self.tight = np.zeros(n, dtype=np.int32)
        self.stack = np.zeros(2 * n + 2 * max_degree + 8, dtype=np.int64)
        self.mark = np.zeros(n, dtype=np.int64)
        self.log = np.zeros(8 * n + 8 * max_degree + 16, dtype=np.int64)
        self.buf = np.zeros(max_degree + 1, dtype=np.int64)

    def _warm_up(self) -> None:
        """Compile (or load from numba's cache) every kernel and time the cost check."""
        self._start(0)
        self._iterate(4)
        self.cost(self.best)  # compiled now; timed below
        t = now()
        self.cost(self.best)
        self.check_s = now() - t

    def _start(self, seed: int) -> None:
        k = _kernels()
        k.seed_rng(seed % 2**32)
        args = (self.indptr, self.indices, self.in_set, self.tight)
        size = k.greedy(*args)
        size += k.initial_local_search(*args, self.stack, self.mark, self.log, self.buf)
        self.size = self.best_size = int(size)
        self.best[:] = self.in_set
        self.stamp = 0

    def _iterate(self, steps: int) -> None:
        k = _kernels()
        size, best_size, stamp = k.iterate(
            self.indptr, self.indices, self.in_set, self.tight, self.size, self.best,
            self.best_size, steps, self.stack, self.mark, self.log, self.buf, self.stamp,
        )
        self.size, self.best_size, self.stamp = int(size), int(best_size), int(stamp)

    def cost(self, state: np.ndarray) -> int:
        """The agent's cost check of ``state`` (int64, from the couplings, not the set size)."""
        return int(_kernels().qubo_cost(self.indptr, self.indices, self.weights, self.diag, state))

    def run(
        self,
        seed: int,
        deadline: float,
        stop: Any,
        on_improve: Any = None,
    ) -> SolverRun:
        """Search until ``deadline`` (seconds on hilbench.clock.now) less the cost-check reserve.

        ``on_improve(cost)`` is called with the best cost after each chunk that improved it and
        may return True to stop (time to solution). Every state held is independent, so its cost
        is minus its size. Returns the best state, its checked cost and
        what the search did.
        """
        t0 = now()
        cpu0 = time.thread_time()
        self._start(seed)
        end = deadline - self.check_s - _MARGIN_S
        steps_done = 0
        chunk = 1
        per_step = None
        improved_at = now()
        if on_improve is not None and on_improve(-self.best_size):
            end = 0.0
        while not stop.is_set():
            t_now = now()
            left = end - t_now
            if left <= 0:
                break
            if per_step is not None:
                # Time to solution reads the best set between chunks: keep them short (1 ms) so
                # that a reach time is late by at most that.
                span = 0.25 * left if on_improve is None else min(0.25 * left, _TTS_CHUNK_S)
                chunk = int(max(1, min(2 * chunk, span / per_step)))
            before = self.best_size
            self._iterate(chunk)
            took = now() - t_now
            steps_done += chunk
            per_step = max(took / chunk, 1e-8)
            if self.best_size > before:
                improved_at = now()
                if on_improve is not None and on_improve(-self.best_size):
                    break
        t_solved = now()
        cost = self.cost(self.best)
        t_checked = now()
        cpu_s = time.thread_time() - cpu0
        return SolverRun(
            cost=cost,
            state=self.best.copy(),
            solver_s=t_solved - t0,
            cost_check_s=t_checked - t_solved,
            solver_params={
                "algorithm": "greedy + ARW (1,2)-swap iterated local search (numba)",
                "ils_steps": steps_done,
                "last_improvement_s": improved_at - t0,
                "reserved_for_cost_check_s": self.check_s + _MARGIN_S,
                # CPU time this thread got; wall time beyond it was spent waiting for a core.
                "cpu_s": cpu_s,
            },
        )
