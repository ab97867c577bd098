"""The agent's side of the workload contracts: every ``configure``, ``load`` and ``run`` body is
decoded against its Struct (and the driver's declared capabilities) before the driver sees it,
and every reply is checked against its Struct before it leaves.

A driver either implements the typed roles (:class:`ContractDriver`: ``load_qubo``/``solve``,
``load_asc``/``run_asc``, ``apply``), receiving Structs and returning them, or keeps the plain
``load``/``run``/``configure`` of :class:`hilbench.agent.driver.Driver`: it then receives the
checked body as a map, and the keys of its reply that the contract does not name travel under
the reply's ``detail``.
"""

from __future__ import annotations

import contextlib
import threading
from typing import Any, ClassVar

import numpy as np

from hilbench.agent.driver import DriverError, DriverResult
from hilbench.contracts import asc, qubo
from hilbench.contracts.base import ContractError, Reply, decode, gather_extras, to_wire
from hilbench.contracts.capabilities import Capabilities, ConfigureReply, Settings
from hilbench.contracts.messages import (
    check_declared,
    check_payloads,
    decode_request,
    reply_type,
)

_QUBO_RUNS = (qubo.FixedTimeout, qubo.TimeToSolution)
_ASC_LOADS = asc.AscLoad.__args__  # type: ignore[attr-defined]


def decode_capabilities(raw: Any) -> Capabilities:
    """A driver's capabilities as the contract's Struct (extras under ``detail``). An ASC
    device that runs ``single_stream`` also offers ``samples``: the agent runs sample lists
    itself, over the driver's own load, run and unload."""
    try:
        caps = decode(Capabilities, gather_extras(Capabilities, raw), "driver_error",
                      "capabilities")
    except ContractError as exc:
        raise DriverError(f"the driver's {exc}", "driver_error") from None
    if caps.asc is not None and "single_stream" in caps.asc.modes \
            and "samples" not in caps.asc.modes:
        caps.asc.modes.append("samples")
    return caps


# Keys each workload's capabilities gained in a protocol version: a peer of an older version
# is not told them (its contract would refuse an unknown key).
_SINCE_4 = {"qubo": ("untimed",), "asc": ("sample_untimed",)}


def capabilities_for_version(caps: dict[str, Any], version: int) -> dict[str, Any]:
    """What a peer of protocol ``version`` may be told: ``samples`` came with version 3, the
    declared untimed work (``qubo.untimed``, ``asc.sample_untimed``) with version 4."""
    if version < 4:
        caps = {**caps, **{workload: {k: v for k, v in caps[workload].items() if k not in keys}
                           for workload, keys in _SINCE_4.items() if caps.get(workload)}}
    declared = caps.get("asc")
    if version >= 3 or not declared or "samples" not in declared.get("modes", ()):
        return caps
    modes = [m for m in declared["modes"] if m != "samples"]
    return {**caps, "asc": {**declared, "modes": modes}}


class Dispatcher:
    """Checks and routes the device commands of one driver."""

    def __init__(self, driver: Any) -> None:
        self.driver = driver
        self.settings: type[Settings] = getattr(driver, "settings", Settings)
        self._caps: Capabilities | None = None
        self._sample_list: dict[int, np.ndarray] = {}  # index -> audio, for ``samples`` runs

    def capabilities(self) -> Capabilities:
        """Decoded once: what the handshake sends and what requests are checked against."""
        if self._caps is None:
            self._caps = decode_capabilities(self.driver.capabilities())
        return self._caps

    def call(self, cmd: str, body: dict[str, Any], arrays: list[np.ndarray],
             stop: threading.Event) -> DriverResult:
        """Decode and check ``body``, run the driver, check its reply (DriverError else)."""
        try:
            request = decode_request(cmd, body, self.settings)
            check_payloads(request, arrays)
            check_declared(request, self.capabilities())
        except ContractError as exc:
            raise DriverError(str(exc), exc.code, key=exc.key) from None
        if isinstance(request, asc.AscLoadSampleList):  # the agent's, not the driver's
            self._sample_list = dict(zip(request.indices, np.array(arrays[0], copy=True),
                                         strict=True))
            return DriverResult(to_wire(asc.AscSampleListReply(indices=request.indices)), [])
        if isinstance(request, asc.AscSamples):
            return DriverResult(to_wire(self._samples(request, stop)), [])
        if isinstance(request, asc.AscLoadModel):
            self._sample_list = {}  # checked against the previous model's input
        _, wire, out = self._checked(cmd, request, body, arrays, stop)
        return DriverResult(wire, list(out))

    def _checked(self, cmd: str, request: Any, body: dict[str, Any] | None,
                 arrays: list[np.ndarray], stop: threading.Event
                 ) -> tuple[Reply, dict[str, Any], list[np.ndarray]]:
        """Run a checked request on the driver; its reply checked against the contract."""
        expected = reply_type(request)
        if isinstance(self.driver, ContractDriver):
            reply, out = self._typed(request, arrays, stop)
            if not isinstance(reply, expected):
                raise DriverError(f"the driver answered {type(reply).__name__}, not "
                                  f"{expected.__name__}", "driver_error")
            wire = to_wire(reply)  # a Struct built in Python is not type-checked: check it here
        else:
            result = self._plain(cmd, request, to_wire(request) if body is None else body,
                                 arrays, stop)
            wire, out = gather_extras(expected, result.body), result.arrays
        try:
            typed = decode(expected, wire, "driver_error", "reply")
        except ContractError as exc:
            raise DriverError(f"the driver's {exc}", "driver_error", key=exc.key) from None
        return typed, wire, out

    def _samples(self, request: asc.AscSamples, stop: threading.Event) -> asc.AscSamplesResult:
        """Single stream over a sample list, beside the device: each sample loaded (untimed),
        run and unloaded through the driver's own calls, the next only after the previous is
        done; between two samples nothing but that (no round trip, no orchestrator work)."""
        missing = [i for i in request.indices if i not in self._sample_list]
        if missing:
            raise DriverError(f"samples {missing[:8]} are not in the loaded sample list (it "
                              f"holds {len(self._sample_list)}): send load with "
                              "part='sample_list' first", "not_loaded", key="indices")
        results: list[asc.AscSampleResult] = []
        total = len(request.indices)
        for k, index in enumerate(request.indices):
            if stop.is_set():
                return asc.AscSamplesResult(results=results, stopped_early=True)
            where = f"sample {index} ({k + 1} of {total} in the list)"
            self._step(where, "load", asc.AscLoadSample(workload="asc", index=index),
                       [self._sample_list[index]], stop)
            try:
                result = self._step(where, "run", asc.AscSingleStream(workload="asc",
                                                                      index=index), [], stop)
            except DriverError:
                # Free the device for whatever comes next; the run's error is the news.
                with contextlib.suppress(DriverError):
                    self._step(where, "load", asc.AscUnload(workload="asc", index=index), [],
                               stop)
                raise
            self._step(where, "load", asc.AscUnload(workload="asc", index=index), [], stop)
            assert isinstance(result, asc.AscSampleResult)
            results.append(result)
        return asc.AscSamplesResult(results=results)

    def _step(self, where: str, cmd: str, request: Any, arrays: list[np.ndarray],
              stop: threading.Event) -> Reply:
        try:
            return self._checked(cmd, request, None, arrays, stop)[0]
        except DriverError as exc:
            raise DriverError(f"{where}: {exc}", exc.code, key=exc.key) from None

    def _typed(self, request: Any, arrays: list[np.ndarray], stop: threading.Event
               ) -> tuple[Reply, list[np.ndarray]]:
        driver = self.driver
        if isinstance(request, Settings):
            linked = None
            if request.sim_meter is not None:
                driver.link_meter(request.sim_meter)
                linked = request.sim_meter
            reply = driver.apply(request)
            reply.sim_meter = linked
            return reply, []
        if isinstance(request, qubo.QuboLoad):
            return driver.load_qubo(request, arrays[0]), []
        if isinstance(request, _QUBO_RUNS):
            solved = driver.solve(request, stop)
            return solved.reply, [solved.state]
        if isinstance(request, _ASC_LOADS):
            return driver.load_asc(request, arrays), []
        return driver.run_asc(request, stop), []

    def _plain(self, cmd: str, request: Any, body: dict[str, Any], arrays: list[np.ndarray],
               stop: threading.Event) -> DriverResult:
        driver = self.driver
        if cmd == "configure":
            if request.sim_meter is not None:
                driver.link_meter(request.sim_meter)
            result = driver.configure({k: v for k, v in body.items() if k != "sim_meter"})
            if request.sim_meter is not None:
                result.body = {**result.body, "sim_meter": request.sim_meter}
            return result
        if cmd == "load":
            return driver.load(body, arrays)
        return driver.run(body, stop)


class ContractDriver:
    """Base of a driver that implements the typed roles. Its plain ``load``/``run``/
    ``configure`` go through the same :class:`Dispatcher` as the agent, so a test or an
    in-process caller gets exactly what an agent would answer."""

    name: ClassVar[str]
    settings: ClassVar[type[Settings]] = Settings

    def capabilities(self) -> dict[str, Any]:
        raise NotImplementedError

    def apply(self, settings: Settings) -> ConfigureReply:
        """Apply device settings (``sim_meter`` is handled by :meth:`link_meter`)."""
        return ConfigureReply()

    def link_meter(self, address: str) -> None:
        raise DriverError("this driver cannot report its device's state to a simulated meter",
                          "bad_arguments", key="sim_meter")

    @property
    def dispatcher(self) -> Dispatcher:
        found = self.__dict__.get("_dispatcher")
        if found is None:
            found = self.__dict__["_dispatcher"] = Dispatcher(self)
        return found

    def configure(self, params: dict[str, Any]) -> DriverResult:
        return self.dispatcher.call("configure", params, [], threading.Event())

    def load(self, params: dict[str, Any], arrays: list[np.ndarray]) -> DriverResult:
        return self.dispatcher.call("load", params, arrays, threading.Event())

    def run(self, params: dict[str, Any], stop: threading.Event) -> DriverResult:
        return self.dispatcher.call("run", params, [], stop)

    def close(self) -> None:
        """Release the device."""
