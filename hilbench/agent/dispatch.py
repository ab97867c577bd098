"""The agent's side of the workload contracts: every ``configure``, ``load`` and ``run`` body is
decoded against its Struct (and the driver's declared capabilities) before the driver sees it,
and every reply is checked against its Struct before it leaves.

A driver either implements the typed roles (:class:`ContractDriver` with the role methods each
workload's plugin routes its requests to — one method per message kind, by the plugin's
``roles`` table — and ``apply``), receiving Structs and returning them, or keeps the plain
``load``/``run``/``configure`` of :class:`hilbench.agent.driver.Driver`: it then receives the
checked body as a map, and the keys of its reply that the contract does not name travel under
the reply's ``detail``.
"""

from __future__ import annotations

import threading
from typing import Any, ClassVar

import numpy as np

from hilbench.agent.driver import DriverError, DriverResult
from hilbench.contracts.base import (
    ContractError,
    Reply,
    decode,
    gather_extras,
    prepare,
    to_wire,
)
from hilbench.contracts.capabilities import (
    Capabilities,
    ConfigureReply,
    Settings,
    capabilities_wire,
)
from hilbench.contracts.messages import (
    check_declared,
    check_payloads,
    decode_request,
    reply_type,
)
from hilbench.contracts.registry import for_request, resolve, workloads


def decode_capabilities(raw: Any) -> Capabilities:
    """A driver's capabilities as the contract's Struct (extras under ``detail``), each
    workload's map completed by its plugin (e.g. a mode the agent serves on the driver's
    behalf)."""
    try:
        caps = decode(Capabilities, gather_extras(Capabilities, raw), "driver_error",
                      "capabilities")
    except ContractError as exc:
        raise DriverError(f"the driver's {exc}", "driver_error") from None
    for name, plugin in workloads().items():
        declared = caps.workload(name)
        if declared is not None and plugin.complete is not None:
            plugin.complete(declared)
    return caps


def capabilities_for_version(caps: Any, version: int) -> dict[str, Any]:
    """What a peer of protocol ``version`` may be told (each workload's plugin drops the keys
    its contract gained since). ``caps`` is the Struct, or its map as the handshake sends it."""
    wire = capabilities_wire(caps) if not isinstance(caps, dict) else caps
    out = dict(wire)
    for name, plugin in workloads().items():
        declared = out.get(name)
        if declared and plugin.for_version is not None:
            out[name] = plugin.for_version(declared, version)
    return out


class Dispatcher:
    """Checks and routes the device commands of one driver."""

    def __init__(self, driver: Any) -> None:
        self.driver = driver
        self.settings: type[Settings] = getattr(driver, "settings", Settings)
        self._caps: Capabilities | None = None
        self._agent_side: dict[str, Any] = {}  # workload -> what the agent serves itself

    def capabilities(self) -> Capabilities:
        """Decoded once: what the handshake sends and what requests are checked against."""
        if self._caps is None:
            self._caps = decode_capabilities(self.driver.capabilities())
            prepare(contract for name, plugin in workloads().items()
                    if self._caps.workload(name) is not None
                    for contract in (plugin.load, plugin.run, *plugin.replies,
                                     *plugin.replies.values()))
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
        served = self._served_by_agent(request, arrays, stop)
        if served is not None:
            return DriverResult(to_wire(served), [])
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

    def _served_by_agent(self, request: Any, arrays: list[np.ndarray],
                         stop: threading.Event) -> Reply | None:
        """A request the workload's agent side serves itself (its plugin's ``agent_side``); None:
        the driver's."""
        plugin = for_request(type(request))
        if plugin is None or plugin.agent_side is None:
            return None
        side = self._agent_side.get(plugin.name)
        if side is None:
            side = self._agent_side[plugin.name] = resolve(plugin.agent_side)(self._step)
        return side.serve(request, arrays, stop)

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
        plugin = for_request(type(request))
        role = plugin.roles.get(type(request)) if plugin is not None else None
        if role is None:
            raise DriverError(f"no role method serves {type(request).__name__}",
                              "driver_error")
        try:
            return role(driver, request, arrays, stop)
        except ContractError as exc:  # the plugin's refusal: e.g. no method for this kind
            raise DriverError(str(exc), exc.code, key=exc.key) from None

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
