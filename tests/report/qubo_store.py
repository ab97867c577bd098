"""A small QUBO store written through the real StoreWriter, for report and serve tests that need
known runs without running a campaign: fixed-timeout runs over two sizes, three timeouts and two
solvers (one infeasible answer, one overrun, power readings in amps on a 12 V supply, a simulated
meter), and time-to-solution runs."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np

from hilbench import __version__
from hilbench.documents import (
    Event,
    Metric,
    PhaseStart,
    PhaseStop,
    RunStart,
    RunStop,
    Samples,
    new_uid,
)
from hilbench.store import StoreWriter

SIMULATION = "instrument dmm: simulated bench meter (power model simulated-cpu)"


def agents(agent: str = "cpu0", host: str = "testhost") -> dict[str, dict[str, object]]:
    """The handshake a run stores: one CPU agent."""
    return {agent: {"driver": "cpu", "hilbench_version": __version__, "protocol_version": 1,
                    "host": host, "capabilities": {}}}


AGENTS = agents()
CONFIG = {"name": "qubo-test", "instruments": [
    {"id": "dmm", "driver": "keysight34465a", "measures": "cpu0", "simulate": "simulated-cpu",
     "settings": {"sample_interval_s": 0.001, "supply_voltage_v": 12.0}}]}


def write_qubo_store(path: Path, name: str = "qubo-test", seed: int = 0, *,
                     agent: str = "cpu0", host: str = "testhost", meter: str = "dmm",
                     sizes: tuple[int, ...] = (10, 50),
                     timeouts: tuple[float, ...] = (0.001, 0.01, 0.1),
                     solvers: tuple[str, ...] = ("sa", "tabu"), tts: bool = True) -> str:
    """Fill ``path`` with one campaign; returns its uid. ``agent``, ``host``, ``meter``: the
    agent's id and host as its handshake says and the meter's id (tests of hostile names); the
    grid can be made smaller."""
    rng = np.random.default_rng(seed)
    campaign = new_uid()
    t = 100.0
    handshake = agents(agent, host)
    instruments = [{**CONFIG["instruments"][0], "id": meter, "measures": agent}]
    with StoreWriter(path) as writer:
        writer.begin_campaign(campaign, name, {**CONFIG, "name": name,
                                               "instruments": instruments})
        for nodes in sizes:
            for timeout in timeouts:
                for solver in solvers:
                    for s in (0, 1):
                        t = _fixed_timeout_run(writer, campaign, rng, t, nodes, timeout,
                                               solver, s, handshake, meter)
        for s in (0, 1) if tts else ():
            t = _tts_run(writer, campaign, t, s, handshake)
        writer.end_campaign(campaign, "success")
    return campaign


def _fixed_timeout_run(writer: StoreWriter, campaign: str, rng: np.random.Generator, t: float,
                       nodes: int, timeout: float, solver: str, seed: int,
                       handshake: dict[str, dict[str, object]], meter: str) -> float:
    run = new_uid()
    key = (f"qubo/fixed_timeout/n={nodes}/d=0.05/seed={seed}/{solver}/timeout={timeout:g}"
           "/rep=0")
    params = {"workload": "qubo", "scenario": "fixed_timeout", "nodes": nodes,
              "density": 0.05, "seed": seed, "solver": solver, "timeout_s": timeout,
              "repetition": 0, "target": -nodes // 2, "target_source": "published"}
    writer(RunStart(run, campaign, key, "qubo.fixed_timeout", params, handshake, t,
                    time.time(), __version__, True, SIMULATION))
    load, solve = new_uid(), new_uid()
    writer(PhaseStart(load, run, "load", t, {}))
    writer(PhaseStop(load, run, t + 0.002, "success"))
    start = t + 0.003
    writer(PhaseStart(solve, run, "solve", start,
                      {a: {"offset_s": 0.0, "uncertainty_s": 5e-5, "rtt_s": 1e-4}
                       for a in handshake}))
    infeasible = nodes == 50 and timeout == 0.001 and solver == "sa" and seed == 0
    overrun = nodes == 50 and timeout == 0.001 and solver == "tabu"
    actual = timeout * (2.0 if overrun else 0.99)
    n = max(1, int(actual / 0.001))
    ts = start + np.arange(n) * 0.001
    writer(Samples(run, solve, meter, "A", ts, 38.0 / 12 + 0.01 * rng.standard_normal(n),
                   {"instrument": "Keysight 34465A (simulated)", "supply_voltage_v": 12.0,
                    "time_resolution_s": 0.001, "t0_uncertainty_s": 1e-4}))
    writer(Event(run, solve, "solution_check", start + actual, {"status": "feasible"}))
    writer(PhaseStop(solve, run, start + actual, "success"))
    gap = None if infeasible else round(abs(rng.normal(0.02, 0.01)) / timeout ** 0.1, 4)
    power = 38.0 + 0.1 * rng.standard_normal() if n >= 2 else None
    window = [start, start + actual]
    metrics = [
        ("requested_s", timeout, "s", None, {}),
        ("actual_s", actual, "s", None, {}),
        ("overrun", 1.0 if overrun else 0.0, "", None,
         {"rule": "actual > requested + max(5 % of requested, 0.5 ms)"}),
        ("feasible", 0.0 if infeasible else 1.0, "", None, {}),
        ("cost", float(-nodes // 2 + 1), "", None, {}),
        ("bks_gap", gap, "", None, {"target": -nodes // 2}),
        ("avg_power_w", power, "W", 0.05 if power else None,
         {"window": window} if power else {"reason": "fewer than 2 readings"}),
        ("energy_j", power * actual if power else None, "J", 0.001 if power else None,
         {"window": window} if power else {"reason": "fewer than 2 readings"}),
    ]
    for name, value, unit, unc, meta in metrics:
        writer(Metric(run, name, value, unit, unc, meta))
    writer(RunStop(run, start + actual + 0.001, "success"))
    return start + actual + 0.01


def _tts_run(writer: StoreWriter, campaign: str, t: float, seed: int,
             handshake: dict[str, dict[str, object]]) -> float:
    run = new_uid()
    params = {"workload": "qubo", "scenario": "time_to_solution", "nodes": 50, "density": 0.05,
              "seed": seed, "solver": "sa", "gaps": [0.1, 0.05, 0.01], "max_time_s": 1.0,
              "repetition": 0}
    key = f"qubo/time_to_solution/n=50/d=0.05/seed={seed}/sa/rep=0"
    writer(RunStart(run, campaign, key, "qubo.time_to_solution", params, handshake, t,
                    time.time(), __version__, True, SIMULATION))
    for i, gap in enumerate((0.1, 0.05, 0.01)):
        latency = 0.001 * (i + 1) * (seed + 1)
        writer(Metric(run, f"tts_s@{gap:g}", latency, "s", None, {}))
        writer(Metric(run, f"tts_energy_j@{gap:g}", 38.0 * latency, "J", 0.001, {}))
    writer(RunStop(run, t + 0.01, "success"))
    return t + 0.02
