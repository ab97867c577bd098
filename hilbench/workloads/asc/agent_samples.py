"""Sample lists, run by the agent beside the device: ``load part="sample_list"`` keeps the
audio on the agent, ``run mode="samples"`` runs single stream over it through the driver's own
load, run and unload, the next sample only after the previous is done (no round trip, no
orchestrator work between two samples). The registry's ASC plugin names this as its agent
side; :class:`hilbench.agent.dispatch.Dispatcher` makes one per driver."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable
from typing import Any

import numpy as np

from hilbench.agent.driver import DriverError
from hilbench.contracts.base import Reply
from hilbench.workloads.asc import contract as asc

# (where, cmd, request, arrays, stop) -> the driver's checked reply (DriverError naming where).
Step = Callable[[str, str, Any, list[np.ndarray], threading.Event], Reply]


class SampleLists:
    """The sample list of one driver, and the ``samples`` runs over it."""

    def __init__(self, step: Step) -> None:
        self._step = step
        self._samples: dict[int, np.ndarray] = {}  # index -> audio
        # request kind -> what the agent does with it (None: the driver's reply)
        self._serves: dict[type, Callable[[Any, list[np.ndarray], threading.Event],
                                          Reply | None]] = {
            asc.AscLoadSampleList: self._load,
            asc.AscSamples: self._run,
            asc.AscLoadModel: self._model_loaded,
        }

    def serve(self, request: Any, arrays: list[np.ndarray], stop: threading.Event
              ) -> Reply | None:
        """The reply to a request the agent serves itself; None: the driver's."""
        serve = self._serves.get(type(request))
        return None if serve is None else serve(request, arrays, stop)

    def _load(self, request: asc.AscLoadSampleList, arrays: list[np.ndarray],
              stop: threading.Event) -> asc.AscSampleListReply:
        self._samples = dict(zip(request.indices, np.array(arrays[0], copy=True), strict=True))
        return asc.AscSampleListReply(indices=request.indices)

    def _model_loaded(self, request: asc.AscLoadModel, arrays: list[np.ndarray],
                      stop: threading.Event) -> None:
        self._samples = {}  # checked against the previous model's input; the driver loads it

    def _run(self, request: asc.AscSamples, arrays: list[np.ndarray], stop: threading.Event
             ) -> asc.AscSamplesResult:
        missing = [i for i in request.indices if i not in self._samples]
        if missing:
            raise DriverError(f"samples {missing[:8]} are not in the loaded sample list (it "
                              f"holds {len(self._samples)}): send load with "
                              "part='sample_list' first", "not_loaded", key="indices")
        results: list[asc.AscSampleResult] = []
        total = len(request.indices)
        for k, index in enumerate(request.indices):
            if stop.is_set():
                return asc.AscSamplesResult(results=results, stopped_early=True)
            where = f"sample {index} ({k + 1} of {total} in the list)"
            self._step(where, "load", asc.AscLoadSample(workload="asc", index=index),
                       [self._samples[index]], stop)
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
