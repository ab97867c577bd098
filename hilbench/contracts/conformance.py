"""The conformance suite: what any driver must do to be hosted by an agent, checked in this
process through the very path an agent and a campaign take (:class:`~hilbench.agent.dispatch.
Dispatcher`, then the orchestrator's handles with their reply contracts).

``check_driver(driver)`` runs the checks for every workload the driver declares and returns
the failures (empty: it conforms). A new driver's tests call it with its own driver::

    from hilbench.contracts.conformance import check_driver
    assert check_driver(MyDriver()) == []

ASC checks need a model the device takes (``asc_model``: a ``QuantisedModel`` or anything with
``metadata()`` and ``arrays()``) and a 1 s sample (``asc_sample``); without them only the
capabilities and the refusals are checked.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from hilbench.contracts import asc, qubo
from hilbench.contracts.base import ContractError, UntimedWork


@dataclass(frozen=True)
class Failure:
    check: str
    reason: str

    def __str__(self) -> str:
        return f"{self.check}: {self.reason}"


class _Suite:
    def __init__(self) -> None:
        self.failures: list[Failure] = []

    def check(self, name: str, step: Callable[[], Any]) -> Any:
        try:
            return step()
        except AssertionError as exc:
            self.failures.append(Failure(name, str(exc) or "assertion failed"))
        except Exception as exc:  # a driver's failure is the finding, whatever it is
            self.failures.append(Failure(name, f"{type(exc).__name__}: {exc}"))
        return None


def _refused(device: Any, code: str, call: Callable[[], Any]) -> None:
    from hilbench.wire.link import AgentError

    try:
        call()
    except AgentError as exc:
        assert exc.code == code, f"refused with {exc.code} ({exc}), not {code}"
        return
    raise AssertionError(f"accepted; the contract asks for {code}")


def check_driver(driver: Any, *, asc_model: Any = None, asc_sample: np.ndarray | None = None,
                 qubo_nodes: int = 12, qubo_timeout_s: float | None = None) -> list[Failure]:
    """Every check of every workload ``driver`` declares; the failures (empty: conforms).

    ``qubo_timeout_s``: the fixed timeout the QUBO checks ask for (default: 50 ms, or the
    driver's declared minimum) — a solver that needs longer to have any state says so here."""
    from hilbench.contracts.remote import RemoteDevice
    from hilbench.orchestrator.local import LocalLink

    suite = _Suite()
    link = LocalLink(driver)
    caps = suite.check("capabilities decode against the contract", lambda: link.capabilities)
    if caps is None:
        return suite.failures
    device = RemoteDevice(link)
    suite.check("unknown workloads are refused", lambda: _refused(
        device, "bad_arguments", lambda: link.request("run", {"workload": "nothing"})))
    suite.check("an empty configure is accepted", lambda: link.request("configure", {}))
    if caps.qubo is not None:
        _check_qubo(suite, device, caps.qubo, qubo_nodes, qubo_timeout_s)
    if caps.asc is not None:
        _check_asc(suite, device, caps.asc, asc_model, asc_sample)
    if caps.qubo is None and caps.asc is None:
        suite.failures.append(Failure("workloads", "the driver declares neither qubo nor asc"))
    return suite.failures


def _check_qubo(suite: _Suite, device: Any, caps: qubo.QuboCapabilities, nodes: int,
                timeout_s: float | None) -> None:
    from hilbench.procedures.qubo_solve import QuboWorkload, check_solution, load, run_body

    workload = QuboWorkload.generate(nodes, 0.2, 0)
    solver = device.qubo
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
                    lambda name=name: _refused_key(device, "run", {
                        "workload": "qubo", "mode": "fixed_timeout", "solver": name,
                        "timeout_s": math.nan, "seed": 0}, "timeout_s"))
    suite.check("qubo: an unknown solver is refused", lambda: _refused_key(device, "run", {
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
    from hilbench.orchestrator.timing_check import declared_untimed

    why = declared_untimed(reply.untimed_s, declared)
    assert why is None, why
    if window is not None and reply.untimed_s:
        outside = window[1] - window[0] - reply.actual_s
        assert reply.untimed_s <= outside + 1e-6, \
            f"untimed_s {reply.untimed_s} s, but the request took {outside} s outside its region"


def _reached(reply: qubo.QuboRunReply) -> None:
    for hit in reply.reached or []:
        assert 0 <= hit.t_s <= reply.actual_s * 1.001 + 1e-6, f"gap {hit.gap} at {hit.t_s} s"


def _refused_key(device: Any, cmd: str, body: dict[str, Any], key: str) -> None:
    from hilbench.wire.link import AgentError

    try:
        device.link.request(cmd, body)
    except AgentError as exc:
        assert exc.code == "bad_arguments", f"refused with {exc.code}, not bad_arguments"
        assert exc.detail.get("key") == key, f"the refusal names {exc.detail.get('key')!r}"
        return
    raise AssertionError("accepted")


def _check_asc(suite: _Suite, device: Any, caps: asc.AscCapabilities, model: Any,
               sample: np.ndarray | None) -> None:
    from hilbench.procedures import asc_device

    suite.check("asc: running a sample that is not held is refused", lambda: _refused(
        device, "not_loaded",
        lambda: device.asc.run_asc(asc.AscSingleStream(workload="asc", index=12345))))
    suite.check("asc: a NaN window is refused naming duration_s", lambda: _refused_key(
        device, "run", {"workload": "asc", "mode": "repeat", "stage": "idle",
                        "duration_s": math.nan}, "duration_s"))
    if model is None or sample is None:
        return
    if suite.check("asc: model load", lambda: asc_device.send_model(device, model)) is None:
        return
    if suite.check("asc: sample load", lambda: asc_device.load_sample(device, 0, sample)) is None:
        return
    if caps.sample_capacity == 1:
        suite.check("asc: a second sample is refused with device_full", lambda: _refused(
            device, "device_full", lambda: asc_device.load_sample(device, 1, sample)))
    result = suite.check("asc: single stream", lambda: device.asc.run_asc(
        asc.AscSingleStream(workload="asc", index=0)))
    if result is not None:
        suite.check("asc: the single-stream result is sound", lambda: _sample(result, caps))
    if "repeat" in caps.modes:
        for stage in ("idle", *caps.timed_stages()):
            window = suite.check(f"asc: repeat {stage}", lambda stage=stage: device.asc.run_asc(
                asc.AscRepeat(workload="asc", stage=stage, duration_s=0.05,  # type: ignore
                              index=None if stage == "idle" else 0)))
            if window is not None:
                suite.check(f"asc: repeat {stage} covers its window",
                            lambda window=window, stage=stage: _window(window, stage))
    suite.check("asc: unload", lambda: asc_device.unload_sample(device, 0))
    suite.check("asc: unloading it again is refused with not_loaded", lambda: _refused(
        device, "not_loaded", lambda: asc_device.unload_sample(device, 0)))
    if "samples" in caps.modes:  # the agent's sample lists, over this driver's own calls
        suite.check("asc: single stream over a sample list", lambda: _sample_list(
            asc_device.run_single_stream(device, np.stack([sample, sample, sample]))))
        suite.check("asc: a sample list's time outside its stages within the declared "
                    "per-sample untimed work", lambda: _sample_untimed(device, sample, caps))


def _sample(result: Any, caps: asc.AscCapabilities) -> None:
    assert isinstance(result, asc.AscSampleResult), type(result).__name__
    assert result.t_end >= result.t_start, "t_end before t_start"
    assert result.inference_s <= result.t_end - result.t_start + 1e-6, \
        "inference_s is longer than the timed region"
    assert 0 <= result.predicted < max(len(result.scores), 1), "predicted is not a class"
    if result.preprocess_s is None:
        assert result.preprocess_reason, "preprocess_s is null without preprocess_reason"


def _sample_list(records: list[Any]) -> None:
    assert [r.index for r in records] == [0, 1, 2], "not the samples asked, in order"
    assert all(r.inference_s >= 0 and r.round_trip_s >= 0 for r in records)


UNTIMED_LIST = 16  # samples in the list the per-sample untimed work is measured over
UNTIMED_TRIES = 3  # a loaded host only adds time: the least of these is the driver's own


def _sample_untimed(device: Any, sample: np.ndarray, caps: asc.AscCapabilities) -> None:
    """What a sample list's window holds besides its samples' stages, per sample (in this
    process: the agent's and the driver's own work, no transport), within what the driver
    declares in ``asc.sample_untimed`` (none declared: 0) plus a sample's load and unload as
    requests of their own, which the orchestrator times before a phase of sample lists."""
    from hilbench.procedures import asc_device

    audio = np.stack([sample] * UNTIMED_LIST)
    indices = list(range(UNTIMED_LIST))
    per_sample, pairs = [], []
    for _ in range(UNTIMED_TRIES):
        asc_device.load_sample(device, 0, sample)
        loaded = device.window[1] - device.window[0]
        asc_device.unload_sample(device, 0)
        pairs.append(loaded + device.window[1] - device.window[0])
        asc_device.load_sample_list(device, indices, audio)
        reply, sent, received = asc_device.run_sample_list(device, indices)
        stages = sum((r.preprocess_s or 0.0) + r.inference_s for r in reply.results)
        per_sample.append((received - sent - stages) / UNTIMED_LIST)
    most = caps.sample_untimed.max_s if caps.sample_untimed is not None else 0.0
    assert min(per_sample) <= most + max(pairs), (
        f"{min(per_sample):.6f} s a sample outside the stages (least of {UNTIMED_TRIES} lists of "
        f"{UNTIMED_LIST}), past the {most:g} s the driver declares (asc.sample_untimed) and the "
        f"{max(pairs):.6f} s a sample's load and unload took as requests of their own")


def _window(window: Any, stage: str) -> None:
    assert isinstance(window, asc.AscWindowResult), type(window).__name__
    assert window.stage == stage, f"stage {window.stage!r}"
    assert window.t_end >= window.t_start, "t_end before t_start"
    if stage == "idle":
        assert window.iterations == 0, "an idle window does no work"
    else:
        assert window.iterations >= 1 and window.mean_s is not None, "no iteration timed"


__all__ = ["ContractError", "Failure", "check_driver"]
