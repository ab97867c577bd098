"""The :class:`~hilbench.workloads.asc.contract.AscDevice` role over an agent link: what an ASC
procedure calls on the device it is given (``RemoteAscDevice(device)``)."""

from __future__ import annotations

import threading

import numpy as np

from hilbench.contracts.base import Reply
from hilbench.contracts.remote import LOAD_TIMEOUT_S, RemoteDevice
from hilbench.workloads.asc import contract as asc


class RemoteAscDevice:
    """:class:`~hilbench.workloads.asc.contract.AscDevice` over an agent link."""

    def __init__(self, device: RemoteDevice) -> None:
        self.device = device

    def load_asc(self, body: asc.AscLoad, arrays: list[np.ndarray]) -> Reply:
        return self.device.call("load", body, arrays, LOAD_TIMEOUT_S)[0]

    def run_asc(self, body: asc.AscRun, stop: threading.Event | None = None) -> Reply:
        budget = getattr(body, "duration_s", 0.0)
        return self.device.call("run", body, None, budget + 60.0)[0]

    def run_samples(self, body: asc.AscSamples) -> asc.AscSamplesResult:
        """Single stream over samples of the loaded list, run by the agent (not a driver's
        role: the agent runs it over the driver's load, run and unload)."""
        reply = self.device.call("run", body, None, 60.0 * len(body.indices))[0]
        assert isinstance(reply, asc.AscSamplesResult)
        return reply
