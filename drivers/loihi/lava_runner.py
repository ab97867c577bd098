"""One Lava QUBO solve in a child process: ``python lava_runner.py JOB_DIR``.

The loihi driver starts this file in its own process group, with the Lava environment's Python
(Python 3.10, lava-nc 0.8.0, lava-optimization 0.3.0), and kills the whole group when it
overruns, so a hang inside Lava never outlives the run. It needs only numpy and Lava, not
hilbench, so the Lava environment can stay as small as Lava's own pins allow.

Input: ``JOB_DIR/job.json`` and ``JOB_DIR/q.npy`` (the int8 Q matrix). Output: one JSON object
per line on stdout, in this order::

    {"event": "ready", "import_s", "setup_s"}        solver built, compiled, runtime initialised
    {"event": "started", "t_start"}                   the timed region begins (CLOCK_MONOTONIC)
    {"event": "solved", "t_end"}                      it ends; Lava's runtime is stopped next
    {"event": "done", ...}                            see ``_solve``; the state is a 0/1 list
    {"event": "error", "message"}                     anything that went wrong, then exit 1

Set-up (build, compile, runtime start) does not depend on the deadline, so it stays outside the
timed region; the timed region is the Lava run, reading the result back, and our cost check.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
import traceback
from pathlib import Path
from typing import Any

import numpy as np

# probes.py lives beside this file; this file runs by path, so put its folder on the path.
sys.path.insert(0, str(Path(__file__).resolve().parent))
from probes import read_profiler

# A target no QUBO of ours can reach: run the whole step budget.
NO_TARGET = -(2**31) + 1


def emit(event: str, **fields: Any) -> None:
    print(json.dumps({"event": event, **fields}), flush=True)


def _config(job: dict[str, Any]) -> Any:
    from lava.lib.optimization.solvers.generic.solver import SolverConfig

    on_chip = job["backend"] == "Loihi2"
    # In chunks we compare with the target ourselves: Lava's own stop at the target pauses the
    # runtime from inside, and the next chunk's run() then fails ("Wrong Response for Pause").
    chunked = job.get("chunk_steps") or job.get("calibration_chunks")
    target = None if chunked else job.get("target_cost")
    return SolverConfig(
        timeout=int(job["steps"]),
        target_cost=NO_TARGET if target is None else int(target),
        backend=job["backend"],
        hyperparameters=job.get("hyperparameters") or {},
        probe_cost=bool(job.get("probe_cost")),
        probe_time=on_chip and bool(job.get("probe_power")),
        probe_energy=on_chip and bool(job.get("probe_power")),
    )


def _steps_run(solver: Any, fallback: int) -> int:
    """Time steps the runtime actually executed (fewer than asked when the target stopped it)."""
    runtime = getattr(solver.solver_process, "runtime", None)
    steps = getattr(runtime, "current_ts", None)
    return int(steps) if isinstance(steps, (int, np.integer)) and steps > 0 else fallback


def _best_cost(solver: Any) -> int:
    from lava.lib.optimization.solvers.generic.monitoring_processes.solution_readout.models import (
        SolutionReadoutPyModel,
    )

    raw, _ = solver.solver_process.optimum.get()
    return int(SolutionReadoutPyModel.decode_cost(raw).reshape(-1)[0])


def _run(solver: Any, condition: Any, job: dict[str, Any], t_start: float) -> list[list[float]]:
    """Run the network: all steps at once (fixed timeout); in the given chunks (calibration);
    or, for time to solution, in chunks of ``chunk_steps`` until the target cost or
    ``max_time_s``. After each chunk: [time since ``t_start``, best cost so far, the chunk's own
    run time] (the reach times' resolution is a chunk)."""
    if not job.get("chunk_steps") and not job.get("calibration_chunks"):
        solver.solver_process.run(condition=condition)
        return []
    from lava.magma.core.run_conditions import RunSteps

    chunks = list(job.get("calibration_chunks") or [])
    target = job.get("target_cost")
    progress: list[list[float]] = []
    longest = 0.0
    while True:
        chunk = int(chunks.pop(0)) if job.get("calibration_chunks") else int(job["chunk_steps"])
        t0 = time.monotonic()
        solver.solver_process.run(condition=RunSteps(num_steps=chunk))
        ran = time.monotonic() - t0
        best = _best_cost(solver)
        now = time.monotonic()
        progress.append([now - t_start, best, ran])
        longest = max(longest, now - t0)
        if job.get("calibration_chunks"):
            if not chunks:
                return progress
        elif (target is not None and best <= target) or now - t_start + longest > float(
            job["max_time_s"]
        ):
            return progress


def _solve(job: dict[str, Any], q: np.ndarray) -> None:
    t0 = time.monotonic()
    from lava.lib.optimization.problems.problems import QUBO
    from lava.lib.optimization.solvers.generic.solver import OptimizationSolver

    import_s = time.monotonic() - t0
    # Lava's CPU neuron models draw from numpy's global generator; its process models run in
    # processes forked after this point, so seeding here makes a run repeatable.
    np.random.seed(int(job.get("seed", 0)) % 2**32)
    q64 = q.astype(np.int64)
    config = _config(job)
    solver = OptimizationSolver(QUBO(q64))
    t_setup = time.monotonic()
    # lava-optimization 0.3.0 builds and compiles inside solve(); we call its two halves so
    # that compilation stays out of the timed region (the pinned version makes this safe).
    condition, run_cfg = solver._prepare_solver(config)
    solver.solver_process.create_runtime(run_cfg=run_cfg)
    emit("ready", import_s=import_s, setup_s=time.monotonic() - t_setup)
    inject = job.get("inject")
    t_start = time.monotonic()
    emit("started", t_start=t_start)
    if inject == "hang":  # test hook: Lava's runtime is up; never answer
        while True:
            time.sleep(3600)
    if inject == "crash":  # test hook: die the way a segfaulting back end would
        os.kill(os.getpid(), 9)
    progress = _run(solver, condition, job, t_start)
    t_run = time.monotonic()
    state, reported_cost, best_step = solver._get_results(config)
    state = np.asarray(state).astype(np.int64).reshape(-1)
    # Our cost check (part of the system under test): recompute x^T Q x in int64.
    valid = bool(state.shape == (q.shape[0],) and np.isin(state, (0, 1)).all())
    recomputed = int(state @ q64 @ state) if state.shape == (q.shape[0],) else None
    t_end = time.monotonic()
    emit("solved", t_end=t_end)  # the timed region is over; what follows is teardown
    steps = _steps_run(solver, int(job["steps"]))
    solver.solver_process.stop()
    # On Loihi 2 the profiler's results are read after the run has stopped.
    profile = read_profiler(solver._profiler) if config.probe_energy else None
    if inject == "wrong_cost":  # test hook: a solver that misreports its cost
        reported_cost = int(reported_cost) + 7
    emit(
        "done",
        t_start=t_start,
        t_end=t_end,
        run_s=t_run - t_start,
        readout_s=t_end - t_run,
        steps_requested=int(job["steps"]),
        steps_run=steps,
        best_step=None if best_step is None else int(best_step),
        reported_cost=None if reported_cost is None else int(reported_cost),
        recomputed_cost=recomputed,
        valid_state=valid,
        state=state.tolist(),
        progress=progress,
        profile=profile,
    )


def end_group_on_signal(signum: int = signal.SIGTERM) -> None:
    """On ``signum`` (the parent-death signal the driver asks Linux for, or a stop) SIGKILL this
    process's whole group: Lava's worker processes do not get that signal themselves, and a
    SIGKILLed agent must leave none of them behind. Only a group leader (as the driver starts
    this file) ends its group; run by hand from a shell, it only exits."""

    def _end(*_: object) -> None:
        if os.getpgrp() == os.getpid():
            os.killpg(os.getpgrp(), signal.SIGKILL)
        os._exit(128 + signum)

    signal.signal(signum, _end)


def main(argv: list[str]) -> int:
    end_group_on_signal()
    if len(argv) != 2:
        print("usage: lava_runner.py JOB_DIR", file=sys.stderr)
        return 2
    job_dir = Path(argv[1])
    try:
        job = json.loads((job_dir / "job.json").read_text())
        q = np.load(job_dir / "q.npy")
        _solve(job, q)
    except BaseException as exc:  # report every failure as a line the driver can quote
        emit("error", message=f"{type(exc).__name__}: {exc}", trace=traceback.format_exc())
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
