"""The :class:`~hilbench.workloads.asc.contract.AscDevice` role over an agent link: what an ASC
procedure calls on the device it is given (``RemoteAscDevice(device)``). One method per message
kind, each returning its typed reply (the request's Struct names the reply it is decoded
against, :func:`hilbench.contracts.messages.reply_type`)."""

from __future__ import annotations

import threading
from typing import TypeVar

import numpy as np

from hilbench.contracts.base import Reply
from hilbench.contracts.remote import LOAD_TIMEOUT_S, RemoteDevice
from hilbench.workloads.asc import contract as asc

R = TypeVar("R", bound=Reply)
WINDOW_MARGIN_S = 60.0  # on top of a power window's own length
SAMPLE_BUDGET_S = 60.0  # one sample takes milliseconds; this only catches a hung device


class RemoteAscDevice:
    """:class:`~hilbench.workloads.asc.contract.AscDevice` over an agent link, with the agent's
    own sample lists (``load_sample_list``, ``run_samples``)."""

    def __init__(self, device: RemoteDevice) -> None:
        self.device = device

    def _call(self, cmd: str, body: object, arrays: list[np.ndarray] | None, budget_s: float,
              expected: type[R]) -> R:
        reply = self.device.call(cmd, body, arrays, budget_s)[0]
        assert isinstance(reply, expected)  # call() decoded it against the request's reply
        return reply

    def load_model(self, body: asc.AscLoadModel, arrays: list[np.ndarray]) -> asc.AscModelReply:
        return self._call("load", body, arrays, LOAD_TIMEOUT_S, asc.AscModelReply)

    def load_sample(self, body: asc.AscLoadSample, audio: np.ndarray) -> asc.AscHeldReply:
        return self._call("load", body, [audio], LOAD_TIMEOUT_S, asc.AscHeldReply)

    def free_sample(self, body: asc.AscUnload) -> asc.AscHeldReply:
        return self._call("load", body, [], LOAD_TIMEOUT_S, asc.AscHeldReply)

    def load_stream(self, body: asc.AscLoadStream, audio: np.ndarray) -> asc.AscStreamReply:
        return self._call("load", body, [audio], LOAD_TIMEOUT_S, asc.AscStreamReply)

    def free_stream(self, body: asc.AscUnloadStream) -> asc.AscStreamReply:
        return self._call("load", body, [], LOAD_TIMEOUT_S, asc.AscStreamReply)

    def load_sample_list(self, body: asc.AscLoadSampleList, audio: np.ndarray
                         ) -> asc.AscSampleListReply:
        """The samples of the next ``samples`` runs, held by the agent (not a driver's role)."""
        return self._call("load", body, [audio], LOAD_TIMEOUT_S, asc.AscSampleListReply)

    def run_sample(self, body: asc.AscSingleStream) -> asc.AscSampleResult:
        return self._call("run", body, None, SAMPLE_BUDGET_S, asc.AscSampleResult)

    def run_repeat(self, body: asc.AscRepeat, stop: threading.Event | None = None
                   ) -> asc.AscWindowResult:
        return self.run_window(body)

    def run_stream(self, body: asc.AscStream, stop: threading.Event | None = None
                   ) -> asc.AscWindowResult:
        return self.run_window(body)

    def run_window(self, body: asc.AscRepeat | asc.AscStream) -> asc.AscWindowResult:
        """A power window of either kind: the same request and reply on the wire."""
        return self._call("run", body, None, body.duration_s + WINDOW_MARGIN_S,
                          asc.AscWindowResult)

    def run_samples(self, body: asc.AscSamples) -> asc.AscSamplesResult:
        """Single stream over samples of the loaded list, run by the agent (not a driver's
        role: the agent runs it over the driver's load, run and unload)."""
        return self._call("run", body, None, SAMPLE_BUDGET_S * len(body.indices),
                          asc.AscSamplesResult)
