"""The `cpu` driver: QUBO with D-Wave SA / Tabu and our `anytime` MIS solver, and the ASC
baseline (MFE + int8 CNN, see :mod:`hilbench_drivers.cpu.asc`) on this machine's CPU, power from
Linux RAPL.

Power comes from RAPL counters read around the timed region. Where RAPL cannot be read (no
powercap, or energy_uj is root-only since Linux 5.10), results carry ``power.measured = false``
and the reason; no number is made up.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Annotated, Any, ClassVar

import msgspec
import numpy as np

from hilbench.agent.dispatch import ContractDriver
from hilbench.agent.driver import DriverError
from hilbench.clock import bench_now, now
from hilbench.contracts.capabilities import ConfigureReply, Settings
from hilbench.power.rapl import DEFAULT_POWERCAP_ROOT, RaplCounters, probe_rapl
from hilbench.sim.device_link import SimulatedDeviceLink, relink
from hilbench.workloads.asc.contract import (
    AscHeldReply,
    AscLoadModel,
    AscLoadSample,
    AscLoadStream,
    AscModelReply,
    AscRepeat,
    AscSampleResult,
    AscSingleStream,
    AscStream,
    AscStreamReply,
    AscUnload,
    AscUnloadStream,
    AscWindowResult,
)
from hilbench.workloads.qubo.contract import (
    FixedTimeout,
    QuboLoad,
    QuboLoadReply,
    QuboRun,
    QuboRunReply,
    Solved,
)
from hilbench_drivers.cpu import qubo_solvers
from hilbench_drivers.cpu.asc import AscDevice
from hilbench_drivers.cpu.asc_nir import nir_support
from hilbench_drivers.cpu.qubo_solvers import LoadedQubo

# A run linked to the simulated meter tells it "solving" before its timed region and "idle"
# after, each waiting for the meter's SIM:SYNC? answer (hilbench.sim.device_link): two loopback
# round trips outside the region that the link's echoes do not hold (undeclared, they made 6 of
# 16 attempts unverified on an idle machine and all 10 of a CI run's). Each reply reports what
# they took (untimed_s), up to this declared maximum; any excess counts against the link. The
# maximum bounds what an agent may claim, not what a loaded host takes: on the real campaign
# path (1 kHz simulated meter, 10 ms runs) both tells of a run took median 0.15 ms, at most
# 0.28 ms in 40 runs idle; under four busy loops on the two cores median 0.23 ms, 90th
# percentile 3.4 ms, at most 8.0 ms in 303 runs, where 3 attempts were unverified and tried
# again (the link's echoes are slowed too) and every unit completed (2026-12-01).
METER_TELL_MAX_S = 0.002
METER_TELL_REASON = ("telling a linked simulated meter the device's state before and after the "
                     "timed region, each waiting for the meter's acknowledgement")


class RaplWindow:
    """Energy used between ``open`` and ``close``, or the reason it was not measured."""

    def __init__(self, counters: RaplCounters | None, reason: str) -> None:
        self.counters = counters
        self.reason = reason
        self._a = counters.snapshot() if counters is not None else None

    def close(self) -> dict[str, Any]:
        if self.counters is None or self._a is None:
            return {"measured": False, "source": "rapl", "reason": self.reason}
        b = self.counters.snapshot()
        per_domain = self.counters.energy_between(self._a, b)
        total = sum(per_domain.values())
        duration = b.t - self._a.t
        return {
            "measured": True,
            "source": "rapl",
            "domains": per_domain,
            "energy_j": total,
            "duration_s": duration,
            "avg_power_w": total / duration if duration > 0 else None,
        }


class CpuSettings(Settings, kw_only=True):
    """``configure`` of the cpu driver: SA's most sweeps per read."""

    num_sweeps: Annotated[int, msgspec.Meta(ge=1, le=1_000_000)] | None = None


class CpuDriver(ContractDriver):
    """QUBO (dwave-samplers) and ASC on the local CPU, measured with RAPL where it can be read.

    Implements both roles of :mod:`hilbench.contracts` (QUBO solver and ASC device); bodies
    arrive checked against their contracts.
    """

    name: ClassVar[str] = "cpu"
    settings: ClassVar[type[Settings]] = CpuSettings

    def __init__(
        self,
        rapl_root: str | Path = DEFAULT_POWERCAP_ROOT,
        num_sweeps: str | int = 1000,
        sim_meter: str | None = None,
        asc_sample_capacity: str | int = 1,
        asc_stream_capacity: str | int = 60,
    ) -> None:
        self.rapl_root = rapl_root
        self.num_sweeps = int(num_sweeps)
        if not 1 <= self.num_sweeps <= 1_000_000:
            raise DriverError(f"num_sweeps must be 1 … 1 000 000, got {num_sweeps}",
                              "bad_arguments", key="num_sweeps")
        # On the simulated bench, the meter is told when this device solves and when it idles
        # (linked here, or by the orchestrator's ``configure {sim_meter}``).
        self._sim: SimulatedDeviceLink | None = None
        if sim_meter:
            self.link_meter(sim_meter)
        self._loaded: LoadedQubo | None = None
        self._rapl, self._rapl_reason = probe_rapl(rapl_root)
        self._asc = AscDevice(self._sim_state, self._sim_states, self._sim_begin,
                              asc_sample_capacity, asc_stream_capacity)

    def link_meter(self, address: str) -> None:
        self._sim = relink(self._sim, address)

    @classmethod
    def declared_limits(cls) -> dict[str, Any]:
        """Per workload, what this driver can hold, known without a device (campaign check
        refuses larger workloads before anything starts; capabilities report the same)."""
        return {"qubo": qubo_solvers.known_limits(), "qubo_solvers": list(qubo_solvers.SOLVERS),
                "nir": nir_support()}

    def capabilities(self) -> dict[str, Any]:
        return {
            # A real CPU runs the work; only the power reading of a simulated bench is not real,
            # and that instrument says so itself.
            "simulated": False,
            "workloads": ["qubo", "asc"],
            "meter_link": True,
            "qubo": {
                "solvers": list(qubo_solvers.SOLVERS),
                "modes": ["fixed_timeout", "time_to_solution"],
                "timeout_range_s": [qubo_solvers.MIN_TIMEOUT_S, qubo_solvers.MAX_TIMEOUT_S],
                # Known limits: the host's memory (Tabu holds a dense float64 n x n matrix).
                "limits": self.declared_limits()["qubo"],
                "untimed": {"max_s": METER_TELL_MAX_S, "reason": METER_TELL_REASON},
            },
            "asc": self._asc.capabilities(),
            "nir": nir_support(),
            "power": {
                "source": "rapl",
                "available": self._rapl is not None,
                "domains": list(self._rapl.domains) if self._rapl else [],
                "reason": self._rapl_reason,
            },
            "detail": {"cpu_count": os.cpu_count()},
        }

    def apply(self, settings: Settings) -> ConfigureReply:
        assert isinstance(settings, CpuSettings)
        if settings.num_sweeps is not None:
            self.num_sweeps = settings.num_sweeps
        return ConfigureReply(detail={"num_sweeps": self.num_sweeps})

    # -- QUBO solver role -----------------------------------------------------------------------

    def load_qubo(self, body: QuboLoad, matrix: np.ndarray) -> QuboLoadReply:
        self._loaded = qubo_solvers.load_qubo(matrix, self.num_sweeps, body.solvers)
        return QuboLoadReply(
            nodes=self._loaded.nodes,
            couplings=self._loaded.sparse.num_couplings,
            load_s=self._loaded.load_s,
            setup_s=self._loaded.setup_s,
        )

    def solve(self, body: QuboRun, stop: threading.Event) -> Solved:
        if self._loaded is None:
            raise DriverError("no workload loaded: send load first", "not_loaded")
        window = RaplWindow(self._rapl, self._rapl_reason)
        before = now()
        self._sim_state("solving")
        t_start = now()
        told = t_start - before  # the acknowledged state changes, outside the timed region
        try:
            if isinstance(body, FixedTimeout):
                result = qubo_solvers.solve_fixed_timeout(
                    self._loaded, body.solver, body.timeout_s, body.seed, stop, t_start)
            else:
                result = qubo_solvers.solve_to_target(
                    self._loaded, body.solver, body.target, body.gaps, body.max_time_s,
                    body.seed, stop, t_start)
        finally:
            t_end = now()
            # Stamped here, when solving ended, not when the link gets to send it (later,
            # when the thread waits for the GIL or a lock).
            self._sim_state("idle", bench_now())
            told += now() - t_end
        run = result.run
        # Contract: the best state travels as the one payload; the orchestrator re-scores it.
        state = np.ascontiguousarray(run.state, dtype=np.uint8)
        # The timed region on this agent's clock; the orchestrator maps it onto its timeline.
        reply = QuboRunReply(
            cost=int(run.cost),
            requested_s=float(result.requested_s),
            actual_s=t_end - t_start,
            t_start=t_start,
            t_end=t_end,
            reached=result.reached,
            solver=body.solver,
            mode=type(body).__struct_config__.tag,
            target=result.target,
            set_size=result.set_size,
            setup_s=result.setup_s,
            solver_s=run.solver_s,
            cost_check_s=run.cost_check_s,
            stopped_early=result.stopped_early,
            power=window.close(),
            solver_params=run.solver_params,
            detail=run.detail,  # what else the solver said (reads, …)
            untimed_s=min(told, METER_TELL_MAX_S) if self._sim is not None else None,
        )
        return Solved(reply, state)

    # -- ASC device role ------------------------------------------------------------------------

    # One method per message kind; the held model, samples and stream are the ASC device's.

    def load_model(self, body: AscLoadModel, arrays: list[np.ndarray]) -> AscModelReply:
        return self._asc.load_model(body, arrays)

    def load_sample(self, body: AscLoadSample, audio: np.ndarray) -> AscHeldReply:
        return self._asc.load_sample(body, audio)

    def free_sample(self, body: AscUnload) -> AscHeldReply:
        return self._asc.free_sample(body)

    def load_stream(self, body: AscLoadStream, audio: np.ndarray) -> AscStreamReply:
        return self._asc.load_stream(body, audio)

    def free_stream(self, body: AscUnloadStream) -> AscStreamReply:
        return self._asc.free_stream(body)

    def run_sample(self, body: AscSingleStream) -> AscSampleResult:
        return self._asc.run_sample(body)

    def run_repeat(self, body: AscRepeat, stop: threading.Event) -> AscWindowResult:
        """A power window with the internal (RAPL) reading over the same loop, where it can
        be read."""
        window = RaplWindow(self._rapl, self._rapl_reason)
        result = self._asc.run_repeat(body, stop)
        result.power = window.close()
        return result

    def run_stream(self, body: AscStream, stop: threading.Event) -> AscWindowResult:
        return self._asc.run_stream(body, stop)

    def _sim_state(self, state: str, t: float | None = None) -> None:
        """Tell the simulated meter the device entered ``state`` at ``t`` (bench clock;
        default now)."""
        if self._sim is not None:
            self._sim.state(state, t)

    def _sim_states(self, changes: list[tuple[str, float]]) -> None:
        """A single-stream sample's stamped stages, told with the next report (see
        :meth:`hilbench.sim.device_link.SimulatedDeviceLink.defer`)."""
        if self._sim is not None:
            self._sim.defer(changes)

    def _sim_begin(self) -> float:
        """Now on the bench clock, as a single-stream sample's first stamp (see
        :meth:`hilbench.sim.device_link.SimulatedDeviceLink.begin`)."""
        return bench_now() if self._sim is None else self._sim.begin()

    def close(self) -> None:
        self._loaded = None
        self._asc.close()
        if self._sim is not None:
            self._sim.close()
