"""The QUBO workload's driver conformance cases (``WorkloadPlugin.conformance``): load and
solve with every declared solver, the state and its claimed cost re-checked, timing fields,
declared untimed work, time to solution, and the refusals the contract asks for."""

from __future__ import annotations

import math
from typing import Any

from hilbench.contracts.base import UntimedWork
from hilbench.orchestrator.timing_check import declared_untimed
from hilbench.testing.driver_conformance import Suite, refused_key
from hilbench.workloads.qubo import contract as qubo
from hilbench.workloads.qubo.procedures.solve import QuboWorkload, check_solution, load, run_body
from hilbench.workloads.qubo.remote import RemoteQuboSolver


def check_qubo(suite: Suite, device: Any, caps: qubo.QuboCapabilities, *, qubo_nodes: int = 12,
               qubo_timeout_s: float | None = None, **_: Any) -> None:
    """``qubo_timeout_s``: the fixed timeout the checks ask for (default: 50 ms, or the
    driver's declared minimum) — a solver that needs longer to have any state says so here."""
    nodes, timeout_s = qubo_nodes, qubo_timeout_s
    workload = QuboWorkload.generate(nodes, 0.2, 0)
    solver = RemoteQuboSolver(device)
    low = caps.timeout_range_s[0] if caps.timeout_range_s else qubo.MIN_TIMEOUT_S
    timeout = timeout_s if timeout_s is not None else max(low, 0.05)
    for name in caps.solvers:
        loaded = suite.check(f"qubo {name}: load", lambda name=name: load(solver, workload,
                                                                          [name]))
        if loaded is None:
            continue
        suite.check(f"qubo {name}: load reply names the nodes",
                    lambda loaded=loaded: _equal(loaded.nodes, nodes, "nodes"))
        solved = suite.check(f"qubo {name}: fixed timeout", lambda name=name: solver.solve(
            run_body("fixed_timeout", name, 0, timeout_s=timeout)))
        if solved is not None:
            suite.check(f"qubo {name}: the state and its claimed cost check out",
                        lambda solved=solved: check_solution(workload, solved))
            suite.check(f"qubo {name}: timing fields agree",
                        lambda solved=solved: _timing(solved.reply, timeout))
            suite.check(f"qubo {name}: untimed work within what the driver declares",
                        lambda solved=solved: _untimed(solved.reply, caps.untimed,
                                                       device.window))
        if "time_to_solution" in caps.modes:
            # target -1: any independent set of one node reaches gap 0.5
            tts = suite.check(f"qubo {name}: time to solution", lambda name=name: solver.solve(
                run_body("time_to_solution", name, 0, target=-1, gaps=[0.5],
                         max_time_s=max(timeout, 0.2))))
            if tts is not None:
                suite.check(f"qubo {name}: reached gaps lie inside the timed region",
                            lambda tts=tts: _reached(tts.reply))
        suite.check(f"qubo {name}: a NaN timeout is refused naming timeout_s",
                    lambda name=name: refused_key(device, "run", {
                        "workload": "qubo", "mode": "fixed_timeout", "solver": name,
                        "timeout_s": math.nan, "seed": 0}, "timeout_s"))
    suite.check("qubo: an unknown solver is refused", lambda: refused_key(device, "run", {
        "workload": "qubo", "mode": "fixed_timeout", "solver": "no-such-solver",
        "timeout_s": timeout, "seed": 0}, "solver"))


def _equal(got: Any, want: Any, what: str) -> None:
    assert got == want, f"{what} is {got!r}, expected {want!r}"


def _timing(reply: qubo.QuboRunReply, timeout: float) -> None:
    assert reply.t_end >= reply.t_start, "t_end before t_start"
    assert math.isclose(reply.actual_s, reply.t_end - reply.t_start, rel_tol=1e-6,
                        abs_tol=1e-6), "actual_s is not t_end - t_start"
    assert math.isclose(reply.requested_s, timeout), f"requested_s {reply.requested_s} != {timeout}"


def _untimed(reply: qubo.QuboRunReply, declared: UntimedWork | None,
             window: tuple[float, float] | None) -> None:
    """A reply's ``untimed_s`` is within the declared maximum, and no larger than the time the
    request took outside its timed region (in this process: nothing but the driver's own)."""
    why = declared_untimed(reply.untimed_s, declared)
    assert why is None, why
    if window is not None and reply.untimed_s:
        outside = window[1] - window[0] - reply.actual_s
        assert reply.untimed_s <= outside + 1e-6, \
            f"untimed_s {reply.untimed_s} s, but the request took {outside} s outside its region"


def _reached(reply: qubo.QuboRunReply) -> None:
    for hit in reply.reached or []:
        assert 0 <= hit.t_s <= reply.actual_s * 1.001 + 1e-6, f"gap {hit.gap} at {hit.t_s} s"
