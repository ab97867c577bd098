"""A store for the results-page tests: the QUBO campaign of :mod:`tests.report.qubo_store`, a
campaign that failed (one failed run, one unverified, each with its reason, and events with long
data) and a campaign still running (a run with power readings and no stop)."""

from __future__ import annotations

import time
from dataclasses import dataclass
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
from tests.report.qubo_store import SIMULATION, agents, write_qubo_store

FAIL_REASON = "agent cpu0 stopped answering during phase solve (timeout 5 s)"
UNVERIFIED_REASON = "timing not verified: clock offset uncertainty 3 ms > 1 ms allowed"
CAMPAIGN_REASON = "2 of 2 runs did not succeed; stopped after the first unit group"
LONG_DATA = {"trace": [f"line {i} of the agent's traceback" for i in range(40)]}


@dataclass(frozen=True)
class PagesStore:
    path: Path
    qubo: str  # a finished campaign
    failed: str  # a failed campaign
    failed_run: str
    unverified_run: str
    running: str  # an incomplete campaign
    running_run: str


def _run(writer: StoreWriter, campaign: str, key: str, t: float, *, status: str | None,
         reason: str = "", meter: str = "dmm", agent: str = "cpu0", host: str = "testhost",
         data: dict[str, object] | None = None) -> str:
    run = new_uid()
    writer(RunStart(run, campaign, key, "qubo.fixed_timeout", {"nodes": 10}, agents(agent, host),
                    t, time.time(), __version__, True, SIMULATION))
    phase = new_uid()
    writer(PhaseStart(phase, run, "solve", t + 0.001, {}))
    n = 3000
    ts = t + 0.001 + np.arange(n) * 0.001
    watts = np.where(np.arange(n) < n // 2, 5.0, 38.0) + 0.01 * np.sin(np.arange(n))
    writer(Samples(run, phase, meter, "W", ts, watts,
                   {"instrument": "Keysight 34465A (simulated)", "time_resolution_s": 0.001}))
    writer(Event(run, phase, "agent_log", t + 0.5, data or LONG_DATA))
    writer(Event(run, phase, "solution_check", t + 1.0, {"status": "feasible"}))
    if status is None:
        return run
    writer(PhaseStop(phase, run, t + 3.0, "success" if status == "success" else "fail",
                     reason))
    writer(Metric(run, "avg_power_w", 21.5, "W", 0.05, {"window": [t + 0.001, t + 3.0],
                                                         "source": meter}))
    writer(Metric(run, "energy_j", None, "J", None, {"reason": "the run failed"}))
    writer(RunStop(run, t + 3.01, status, reason))  # type: ignore[arg-type]
    return run


def write_pages_store(path: Path, name: str = "qubo-test", *, agent: str = "cpu0",
                      host: str = "testhost", meter: str = "dmm",
                      reason: str = FAIL_REASON) -> PagesStore:
    """The three campaigns; ``name``, ``agent``, ``host``, ``meter`` and the failure ``reason``
    given (tests of hostile text)."""
    qubo = write_qubo_store(path, name, agent=agent, host=host, meter=meter,
                            sizes=(10,), timeouts=(0.01,), solvers=("sa",), tts=False)
    failed, running = new_uid(), new_uid()
    kw = {"meter": meter, "agent": agent, "host": host}
    with StoreWriter(path) as writer:
        writer.begin_campaign(failed, f"{name} failed", {"name": f"{name} failed"})
        failed_run = _run(writer, failed, "qubo/fixed_timeout/n=10/seed=0/rep=0", 1000.0,
                          status="fail", reason=reason, **kw)
        unverified_run = _run(writer, failed, "qubo/fixed_timeout/n=10/seed=1/rep=0",
                              1010.0, status="unverified", reason=UNVERIFIED_REASON, **kw)
        writer.end_campaign(failed, "fail", CAMPAIGN_REASON if reason == FAIL_REASON
                            else reason)
        writer.begin_campaign(running, f"{name} running", {"name": f"{name} running"})
        running_run = _run(writer, running, "qubo/fixed_timeout/n=10/seed=2/rep=0", 2000.0,
                           status=None, **kw)
    return PagesStore(path, qubo, failed, failed_run, unverified_run, running, running_run)
