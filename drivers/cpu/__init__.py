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
from typing import Any, ClassVar

import numpy as np

from hilbench.agent.driver import DriverError, DriverResult
from hilbench.clock import now
from hilbench.power.rapl import DEFAULT_POWERCAP_ROOT, RaplCounters, probe_rapl
from hilbench.sim.device_link import SimulatedDeviceLink
from hilbench_drivers.cpu import qubo_solvers
from hilbench_drivers.cpu.asc import AscDevice
from hilbench_drivers.cpu.qubo_solvers import LoadedQubo


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


class CpuDriver:
    """QUBO (dwave-samplers) and ASC on the local CPU, measured with RAPL where it can be read.

    Requests whose body says ``"workload": "asc"`` go to the ASC device; all others are QUBO.
    """

    name: ClassVar[str] = "cpu"

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
        # On the simulated bench, the meter is told when this device solves and when it idles.
        self._sim = self._link_simulated_meter(sim_meter) if sim_meter else None
        self._loaded: LoadedQubo | None = None
        self._workload: dict[str, Any] = {}
        self._rapl, self._rapl_reason = probe_rapl(rapl_root)
        self._asc = AscDevice(self._sim_state, asc_sample_capacity, asc_stream_capacity)

    @staticmethod
    def _link_simulated_meter(address: str) -> SimulatedDeviceLink:
        try:
            return SimulatedDeviceLink(address)
        except (OSError, ValueError) as exc:
            raise DriverError(f"cannot reach the simulated meter at {address}: {exc}") from exc

    def capabilities(self) -> dict[str, Any]:
        return {
            # A real CPU runs the work; only the power reading of a simulated bench is not real,
            # and that instrument says so itself.
            "simulated": False,
            "workloads": ["qubo", "asc"],
            "qubo": {
                "solvers": list(qubo_solvers.SOLVERS),
                "modes": ["fixed_timeout", "time_to_solution"],
                "timeout_range_s": [qubo_solvers.MIN_TIMEOUT_S, qubo_solvers.MAX_TIMEOUT_S],
                # Known limits: the host's memory (Tabu holds a dense float64 n x n matrix).
                "limits": qubo_solvers.known_limits(),
            },
            "asc": self._asc.capabilities(),
            "power": {
                "source": "rapl",
                "available": self._rapl is not None,
                "domains": list(self._rapl.domains) if self._rapl else [],
                "reason": self._rapl_reason,
            },
            "cpu_count": os.cpu_count(),
        }

    def configure(self, params: dict[str, Any]) -> DriverResult:
        if "num_sweeps" in params:
            self.num_sweeps = int(params["num_sweeps"])
        return DriverResult({"num_sweeps": self.num_sweeps})

    def load(self, params: dict[str, Any], arrays: list[np.ndarray]) -> DriverResult:
        if params.get("workload") == "asc":
            return DriverResult(self._asc.load(params, arrays))
        if params.get("workload") != "qubo":
            raise DriverError(
                f"cpu driver cannot load workload {params.get('workload')!r}", "bad_arguments"
            )
        if len(arrays) != 1 or arrays[0].dtype != np.int8:
            raise DriverError(
                "a qubo load carries exactly one int8 matrix payload", "bad_arguments"
            )
        solvers = params.get("solvers")
        self._loaded = qubo_solvers.load_qubo(
            arrays[0], self.num_sweeps, [str(s) for s in solvers] if solvers else None
        )
        self._workload = {k: params[k] for k in ("nodes", "density", "seed") if k in params}
        return DriverResult(
            {
                "nodes": self._loaded.nodes,
                "couplings": self._loaded.sparse.num_couplings,
                "load_s": self._loaded.load_s,
                "setup_s": self._loaded.setup_s,
            }
        )

    def run(self, params: dict[str, Any], stop: threading.Event) -> DriverResult:
        if params.get("workload") == "asc":
            return self._run_asc(params, stop)
        if self._loaded is None:
            raise DriverError("no workload loaded: send load first", "not_loaded")
        mode = params.get("mode", "fixed_timeout")
        solver = str(params.get("solver", "sa"))
        seed = int(params.get("seed", 0))
        window = RaplWindow(self._rapl, self._rapl_reason)
        self._sim_state("solving")
        t_start = now()
        try:
            result = self._solve(mode, solver, seed, params, stop, t_start)
        finally:
            t_end = now()
            self._sim_state("idle")
        result["power"] = window.close()
        result["mode"] = mode
        result["solver"] = solver
        # The timed region on this agent's clock; the orchestrator maps it onto its timeline.
        result["t_start"] = t_start
        result["t_end"] = t_end
        result["actual_s"] = t_end - t_start
        # Contract: the best state travels as the one payload; the orchestrator re-scores it.
        state = np.ascontiguousarray(result.pop("state"), dtype=np.uint8)
        return DriverResult(result, [state])

    def _run_asc(self, params: dict[str, Any], stop: threading.Event) -> DriverResult:
        if params.get("mode") != "repeat":
            return DriverResult(self._asc.run(params, stop))
        # A power window: the internal (RAPL) reading over the same loop, where it can be read.
        window = RaplWindow(self._rapl, self._rapl_reason)
        result = self._asc.run(params, stop)
        result["power"] = window.close()
        return DriverResult(result)

    def _sim_state(self, state: str) -> None:
        if self._sim is not None:
            self._sim.state(state)

    def _solve(
        self,
        mode: str,
        solver: str,
        seed: int,
        params: dict[str, Any],
        stop: threading.Event,
        t_start: float,
    ) -> dict[str, Any]:
        assert self._loaded is not None
        if mode == "fixed_timeout":
            return qubo_solvers.solve_fixed_timeout(
                self._loaded, solver, float(params["timeout_s"]), seed, stop, t_start
            )
        if mode == "time_to_solution":
            return qubo_solvers.solve_to_target(
                self._loaded,
                solver,
                int(params["target"]),
                [float(g) for g in params.get("gaps", [0.1, 0.05, 0.01])],
                float(params.get("max_time_s", 10.0)),
                seed,
                stop,
                t_start,
            )
        raise DriverError(f"unknown qubo mode {mode!r}", "bad_arguments")

    def close(self) -> None:
        self._loaded = None
        self._asc.close()
        if self._sim is not None:
            self._sim.close()
