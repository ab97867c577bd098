"""The `loihi` driver: QUBO on Intel Loihi 2 through Lava and lava-optimization.

Each solve runs in a child process (:mod:`hilbench_drivers.loihi.child`) started with the Lava
environment's Python, so this driver imports no Lava itself and runs under any Python hilbench
supports. ``backend = "CPU"`` (the default) uses Lava's CPU back end: the real Lava code, but its
times and power say nothing about Loihi, and every result says so. ``backend = "Loihi2"`` uses
``Loihi2HwCfg`` and the chip's power and time probes.

A timeout in seconds becomes a number of Lava time steps through the time per step: configured
(option ``time_per_step_s``) or measured at load by a calibration run; both are reported.
"""

from __future__ import annotations

import hashlib
import json
import math
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal

import msgspec
import numpy as np

from hilbench.agent.dispatch import ContractDriver
from hilbench.agent.driver import DriverError
from hilbench.contracts.capabilities import ConfigureReply, Settings
from hilbench.workloads.qubo.contract import (
    FixedTimeout,
    QuboLoad,
    QuboLoadReply,
    QuboRun,
    QuboRunReply,
    Reached,
    Solved,
)
from hilbench_drivers.loihi.child import run_child
from hilbench_drivers.loihi.probe_source import LoihiProbeSource

BACKENDS = ("CPU", "Loihi2")
SOLVERS = ("lava",)
MIN_TIMEOUT_S = 1e-3
MAX_TIMEOUT_S = 1e3
CPU_SIMULATION = "Lava CPU back end: says nothing about Loihi's speed or power"
NO_PROBES = "the Lava CPU back end has no on-chip power probes (Loihi 2 only)"
# docs-notes/nir.md: measured on the pinned Lava (.venv-loihi).
NO_NIR = ("the pinned Lava (lava-nc 0.8.0, lava-optimization 0.3.0) has no NIR reader; lava-dl's "
          "NIR import (lava-dl pull request 218) was never merged, and this driver runs QUBO "
          "solvers only")
# Tuned on Lava's CPU back end (n = 25 and 50, density 5–10 %, 1 000 steps): the default
# temperature 1 leaves the network nearly frozen (cost -2 where the optimum is -20 at n = 50).
# Refractory periods keep a neuron from flipping straight back. See drivers/loihi/README.md.
DEFAULT_HYPERPARAMETERS: dict[str, Any] = {"temperature": 6, "refract": 16}


def _truthy(value: str | bool) -> bool:
    return value if isinstance(value, bool) else str(value).lower() in ("1", "true", "yes")


def gap_threshold_cost(target: int, gap: float) -> int:
    """The highest cost whose BKS-gap ``(c - t) / |t|`` is at most ``gap``."""
    return math.floor(target + gap * abs(target) + 1e-9)


class LoihiSettings(Settings, kw_only=True):
    """``configure`` of the loihi driver: ``time_per_step_s`` (0: the one measured at load
    again), ``inject``: a test fault for the next run, honoured only with the option
    allow_inject."""

    hyperparameters: dict[str, Any] | None = None
    time_per_step_s: Annotated[float, msgspec.Meta(ge=0, le=10.0)] | None = None
    margin_s: Annotated[float, msgspec.Meta(ge=0, le=3600.0)] | None = None
    inject: Literal["hang", "crash", "wrong_cost"] | None = None


class LoihiDriver(ContractDriver):
    """QUBO with lava-optimization's solver, on Loihi 2 or on Lava's CPU back end."""

    name: ClassVar[str] = "loihi"
    settings: ClassVar[type[Settings]] = LoihiSettings

    def __init__(
        self,
        backend: str = "CPU",
        lava_python: str | None = None,
        time_per_step_s: str | float | None = None,
        calibration_steps: str | int = 250,
        hyperparameters: str | None = None,
        setup_timeout_s: str | float = 120.0,
        margin_s: str | float = 5.0,
        allow_inject: str | bool = False,
    ) -> None:
        if backend not in BACKENDS:
            raise DriverError(f"backend {backend!r} is not one of {BACKENDS}", "bad_arguments")
        self.backend = backend
        self.lava_python = lava_python or sys.executable
        self.configured_step_s = float(time_per_step_s) if time_per_step_s else None
        self.calibration_steps = int(calibration_steps)
        try:
            hp = json.loads(hyperparameters) if hyperparameters else DEFAULT_HYPERPARAMETERS
        except json.JSONDecodeError as exc:
            raise DriverError(
                f"option hyperparameters is not JSON: {exc}", "bad_arguments"
            ) from None
        self.hyperparameters: dict[str, Any] = dict(hp)
        self.setup_timeout_s = float(setup_timeout_s)
        self.margin_s = float(margin_s)
        self.allow_inject = _truthy(allow_inject)
        self._inject_next: str | None = None  # configure {inject}: a test fault, next run only
        self._dir = Path(tempfile.mkdtemp(prefix="hilbench-loihi-"))
        self._matrix: np.ndarray | None = None
        self._calibrations: dict[str, dict[str, Any]] = {}  # matrix sha256 -> calibration
        self._calibration: dict[str, Any] | None = None
        self.last_child_pid: int | None = None  # also its process group: for tests and logs
        self.last_child_timeline: dict[str, float] = {}  # event -> monotonic time
        # The only way probe readings reach a reply (see _power).
        self.power_source = LoihiProbeSource(
            available=not self.simulated, reason=NO_PROBES if self.simulated else None
        )

    @property
    def simulated(self) -> bool:
        return self.backend == "CPU"

    @classmethod
    def declared_limits(cls) -> dict[str, Any]:
        """Known without a device: it cannot run NIR graphs (a campaign refuses such a unit)."""
        return {"nir": {"runs": False, "reason": NO_NIR}}

    def capabilities(self) -> dict[str, Any]:
        caps: dict[str, Any] = {
            "workloads": ["qubo"],
            "nir": self.declared_limits()["nir"],
            "qubo": {
                "solvers": list(SOLVERS),
                "modes": ["fixed_timeout", "time_to_solution"],
                "timeout_range_s": [MIN_TIMEOUT_S, MAX_TIMEOUT_S],
                "untimed": self.untimed_work(),
            },
            "simulated": self.simulated,
            # Both back ends name the probes; only Loihi 2 has them.
            "power": {
                "source": self.power_source.info.name,
                "available": self.power_source.available,
                "reason": self.power_source.reason,
                "rails": list(self.power_source.info.domains),
                "simulated": self.power_source.info.simulated,
            },
            "detail": {"backend": self.backend, "lava_python": self.lava_python,
                       "hyperparameters": self.hyperparameters},
        }
        if self.simulated:
            caps["simulation"] = CPU_SIMULATION
        return caps

    def untimed_work(self) -> dict[str, Any]:
        """The most a run spends outside its timed region (reported as ``untimed_s``): a Lava
        process per run, whose start, build and compile and whose teardown are each killed
        past ``setup_timeout_s``, and the run's margin past its timed region (``margin_s``)."""
        return {"max_s": min(3600.0, 2 * self.setup_timeout_s + self.margin_s),
                "reason": f"a Lava process per run: its start, network build and compile and "
                          f"its teardown (each killed past setup_timeout_s = "
                          f"{self.setup_timeout_s:g} s) and the run's margin (margin_s = "
                          f"{self.margin_s:g} s)"}

    def apply(self, settings: Settings) -> ConfigureReply:
        assert isinstance(settings, LoihiSettings)
        if settings.hyperparameters is not None:
            self.hyperparameters = dict(settings.hyperparameters)
        if settings.time_per_step_s is not None:  # 0: back to the measured time per step
            self.configured_step_s = settings.time_per_step_s or None
        if settings.margin_s is not None:
            self.margin_s = settings.margin_s
        if settings.inject is not None:
            self._inject_next = settings.inject
        return ConfigureReply(detail={"hyperparameters": self.hyperparameters,
                                      "time_per_step_s": self.configured_step_s,
                                      "margin_s": self.margin_s})

    # ------------------------------------------------------------------- load
    def load_qubo(self, body: QuboLoad, matrix: np.ndarray) -> QuboLoadReply:
        np.save(self._dir / "q.npy", matrix)
        self._matrix = matrix
        digest = hashlib.sha256(matrix.tobytes()).hexdigest()
        calibration = self._calibrations.get(digest)
        if calibration is None:
            calibration = self._calibrate()
            self._calibrations[digest] = calibration
        self._calibration = calibration
        record = self._step_record()
        return QuboLoadReply(nodes=int(matrix.shape[0]), setup_s=record.pop("setup_s"),
                             detail=record)

    def _calibrate(self) -> dict[str, Any]:
        """Measure Lava's run time as ``start_s + steps × step_s`` with two runs of the same
        network (a fifth of ``calibration_steps``, then all of them): each run() pays a fixed
        start that a per-step average would spread over the steps, overrunning short timeouts."""
        short, long = max(10, self.calibration_steps // 5), max(20, self.calibration_steps)
        done = self._child(
            {"steps": short + long, "calibration_chunks": [short, long], "seed": 0},
            self.setup_timeout_s,
            threading.Event(),
        )
        t_short, t_long = done["progress"][0][2], done["progress"][1][2]
        step_s = (t_long - t_short) / (long - short)
        if step_s <= 0:  # noise swamped the difference: fall back to the plain average
            step_s, start_s = t_long / long, 0.0
        else:
            start_s = max(0.0, t_short - short * step_s)
        return {
            "steps": [short, long],
            "run_s": [t_short, t_long],
            "step_s": step_s,
            "start_s": start_s,
            "readout_s": done["readout_s"],
            "setup_s": done["setup_s"],
        }

    @property
    def run_overhead_s(self) -> float:
        """What a run costs besides its steps: Lava's start of a run, read-out and cost check."""
        assert self._calibration is not None
        return float(self._calibration["start_s"] + self._calibration["readout_s"])

    def _step_record(self) -> dict[str, Any]:
        assert self._calibration is not None
        measured = self._calibration["step_s"]
        used = self.configured_step_s or measured
        return {
            "time_per_step_s": {
                "measured": measured,
                "configured": self.configured_step_s,
                "used": used,
                "used_from": "configured" if self.configured_step_s else "measured",
            },
            "calibration": self._calibration,
            "setup_s": self._calibration["setup_s"],
        }

    # -------------------------------------------------------------------- run
    def solve(self, body: QuboRun, stop: threading.Event) -> Solved:
        entered = time.monotonic()  # durations only: the Lava child reads this clock too
        if self._matrix is None or self._calibration is None:
            raise DriverError("no workload loaded: send load first", "not_loaded")
        step_s = self._step_record()["time_per_step_s"]["used"]
        overhead_s = self.run_overhead_s
        job: dict[str, Any] = {"seed": body.seed}
        inject, self._inject_next = self._inject_next, None
        if self.allow_inject and inject:
            job["inject"] = inject
        if isinstance(body, FixedTimeout):
            requested = body.timeout_s
            job["steps"] = max(1, math.floor((requested - overhead_s) / step_s))
        else:
            requested = body.max_time_s
            gaps = sorted(set(body.gaps))
            # Chunks of about 1 % of the budget (at least 10 steps): the resolution of the
            # reach times, each one a measured clock reading after the chunk ended.
            job.update(
                steps=max(1, math.floor(requested / step_s)),
                chunk_steps=max(10, math.floor(0.01 * requested / step_s)),
                max_time_s=requested,
                target_cost=gap_threshold_cost(body.target, gaps[0]),
            )
        if self.power_source.available:
            self.power_source.start()
        done = self._child(job, requested + overhead_s + self.margin_s, stop)
        reply = self._reply(done, body, requested, job)
        if not isinstance(body, FixedTimeout):
            reply.reached = self._reached(done, body.target, gaps)
            reply.target = body.target
        state = np.asarray(done["state"], dtype=np.int8)
        # A Lava process per run: its start, build and teardown lie outside the timed region,
        # and the orchestrator checks its request→reply window against the claim with them.
        reply.untimed_s = max(0.0, time.monotonic() - entered - reply.actual_s)
        return Solved(reply, state)

    def _child(
        self, job: dict[str, Any], run_budget_s: float, stop: threading.Event
    ) -> dict[str, Any]:
        job = {
            "backend": self.backend,
            "hyperparameters": self.hyperparameters,
            "probe_power": not self.simulated,
            **job,
        }
        run = run_child(
            self.lava_python,
            self._dir,
            job,
            self.setup_timeout_s,
            run_budget_s,
            stop,
            on_start=lambda pid: setattr(self, "last_child_pid", pid),
            timeline=self.last_child_timeline,
        )
        return {**run.events["ready"], **run.events["done"]}

    def _reply(self, done: dict[str, Any], body: QuboRun, requested: float,
               job: dict[str, Any]) -> QuboRunReply:
        """The solver's claimed cost, requested and actual time, and what our own cost check
        found (the orchestrator checks the returned state again)."""
        reported, recomputed = done["reported_cost"], done["recomputed_cost"]
        if not done["valid_state"]:
            raise DriverError(
                f"Lava returned an invalid state (entries {sorted(set(done['state']))[:5]}, "
                f"not 0/1) with a reported cost of {reported}",
                "bad_solution",
            )
        if reported != recomputed:
            raise DriverError(
                f"Lava reported cost {reported}, but the state it returned costs {recomputed} "
                "(x^T Q x in int64): the solver's claim is wrong",
                "bad_solution",
            )
        actual = done["t_end"] - done["t_start"]
        detail: dict[str, Any] = {
            "backend": self.backend,
            "solver_reported_cost": int(reported),
            "run_s": actual,
            "steps_requested": done["steps_requested"],
            "steps_run": done["steps_run"],
            "best_step": done["best_step"],
            **self._step_record(),
            "simulated": self.simulated,
        }
        detail.pop("setup_s")
        if self.simulated:
            detail["simulation"] = CPU_SIMULATION
        return QuboRunReply(
            cost=int(reported),
            requested_s=requested,
            actual_s=actual,
            t_start=done["t_start"],
            t_end=done["t_end"],
            solver=body.solver,
            mode=type(body).__struct_config__.tag,
            set_size=int(sum(done["state"])),
            setup_s=done["setup_s"],
            solver_s=done["run_s"],
            cost_check_s=done["readout_s"],
            power=self._power(done),
            solver_params={**self.hyperparameters, "seed": job["seed"]},
            detail=detail,
        )

    def _power(self, done: dict[str, Any]) -> dict[str, Any]:
        """The reply's ``power`` entry, from the samples the probe source gives for this run."""
        source = self.power_source
        if not source.available:
            return source.report()
        if done.get("profile"):
            source.record(done["profile"], float(done["t_start"]))
        return source.report(source.stop())

    def _reached(self, done: dict[str, Any], target: int, gaps: list[float]) -> list[Reached]:
        """When the best cost first reached each gap, in seconds since t_start: the clock
        reading after the chunk in which it was reached. Only gaps the returned (checked) state
        also reaches are listed."""
        best = int(done["recomputed_cost"])
        reached = []
        for gap in sorted(gaps, reverse=True):
            threshold = gap_threshold_cost(target, gap)
            if best > threshold:
                continue
            hit = next((t for t, cost, _ in done["progress"] if cost <= threshold), None)
            if hit is not None:
                reached.append(Reached(gap=gap, t_s=float(hit)))
        return reached

    def close(self) -> None:
        self._matrix = None
        shutil.rmtree(self._dir, ignore_errors=True)
