"""Each ASC message kind reaches its own role method (the ASC plugin's table, read by the agent's
dispatcher): a driver writes one method per kind and never switches on the message, and a
driver without streams is refused a stream request naming ``part`` or ``mode``."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from hilbench.agent.driver import DriverError
from hilbench.workloads.asc import contract as asc
from hilbench.workloads.asc.plugin import ROLES, WORKLOAD
from hilbench.workloads.asc.vectors import fixed_model
from hilbench_drivers.cpu import CpuDriver

MODEL = fixed_model()
RATE = MODEL.mfe_config.sample_rate
AUDIO = (0.1 * np.sin(2 * np.pi * 440 * np.arange(RATE) / RATE)).astype(np.float32)


class Recorder:
    """Names the method each request reached, with what it was given."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, tuple]] = []

    def __getattr__(self, name: str):
        def method(*args):
            self.calls.append((name, args))
            return "reply"
        return method


REQUESTS = [
    (asc.AscLoadModel(workload="asc", meta={}, arrays=["w"]), "load_model", "arrays"),
    (asc.AscLoadSample(workload="asc", index=3), "load_sample", "first array"),
    (asc.AscUnload(workload="asc", index=3), "free_sample", None),
    (asc.AscLoadStream(workload="asc", indices=[0, 1]), "load_stream", "first array"),
    (asc.AscUnloadStream(workload="asc"), "free_stream", None),
    (asc.AscSingleStream(workload="asc", index=3), "run_sample", None),
    (asc.AscRepeat(workload="asc", stage="idle", duration_s=1.0), "run_repeat", "stop"),
    (asc.AscStream(workload="asc", stage="idle", duration_s=1.0), "run_stream", "stop"),
]


@pytest.mark.parametrize(("request_", "method", "extra"), REQUESTS,
                         ids=[m for _, m, _ in REQUESTS])
def test_each_kind_reaches_its_own_method(request_, method, extra):
    driver, payload, stop = Recorder(), [np.zeros(4, np.float32)], threading.Event()
    reply, out = ROLES[type(request_)](driver, request_, payload, stop)
    assert (reply, out) == ("reply", [])
    [(name, args)] = driver.calls
    assert name == method and args[0] is request_
    given = {"arrays": (payload,), "first array": (payload[0],), "stop": (stop,), None: ()}
    assert args[1:] == given[extra]


def test_every_driver_request_has_a_method_on_the_role():
    agent_side = {asc.AscLoadSampleList, asc.AscSamples}  # the agent runs sample lists
    assert set(ROLES) == set(WORKLOAD.replies) - agent_side
    role_methods = {m for m in vars(asc.AscDevice) if not m.startswith("_")}
    assert {method for _, method, _ in REQUESTS} == role_methods


class NoStreams(CpuDriver):
    """The cpu driver without the stream methods a device without streams leaves out."""

    load_stream = None  # type: ignore[assignment]


def test_a_driver_without_the_method_is_refused_naming_the_part(tmp_path):
    driver = NoStreams(rapl_root=str(tmp_path / "no-powercap"))
    try:
        with pytest.raises(DriverError) as refused:
            driver.load({"workload": "asc", "part": "stream", "indices": [0, 1]},
                        [np.stack([AUDIO, AUDIO])])
        assert (refused.value.code, refused.value.key) == ("bad_arguments", "part")
        assert "no load_stream method" in str(refused.value)
    finally:
        driver.close()


def test_the_cpu_driver_serves_a_stream_through_its_own_methods(tmp_path):
    driver = CpuDriver(rapl_root=str(tmp_path / "no-powercap"))
    try:
        arrays = MODEL.arrays()
        names = sorted(arrays)
        driver.load({"workload": "asc", "part": "model", "meta": MODEL.metadata(),
                     "arrays": names}, [arrays[n] for n in names])
        loaded = driver.load({"workload": "asc", "part": "stream", "indices": [4, 5]},
                             [np.stack([AUDIO, AUDIO])]).body
        assert (loaded["stream_samples"], loaded["indices"]) == (2, [4, 5])
        window = driver.run({"workload": "asc", "mode": "stream", "stage": "inference",
                             "duration_s": 0.05}, threading.Event()).body
        assert window["indices"] == [4, 5] and window["iterations"] >= 1
        freed = driver.load({"workload": "asc", "part": "unload_stream"}, []).body
        assert freed["stream_samples"] == 0
        with pytest.raises(DriverError) as refused:
            driver.run({"workload": "asc", "mode": "stream", "stage": "inference",
                        "duration_s": 0.05}, threading.Event())
        assert refused.value.code == "not_loaded"
    finally:
        driver.close()
