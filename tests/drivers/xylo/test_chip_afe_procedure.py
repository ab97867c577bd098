"""The ASC procedure on the on-chip AFE (``-o afe=chip``): the xylo driver on the samna/Rockpool,
AFESamna and sounddevice stand-ins, served by a real agent over ZeroMQ; single stream then
``asc.power`` with the HDK's on-board monitor. Pre-processing gets a measured time (the
sample's real-time recording window, the latency beside it) and power from the AFE rails."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from hilbench.contracts.remote import RemoteDevice
from hilbench.documents import DocumentStream, Event, Metric
from hilbench.orchestrator.phases import RunContext
from hilbench.workloads.asc.procedures.power import run_power_unit
from hilbench.workloads.asc.procedures.single_stream import run_single_stream_unit
from hilbench.workloads.asc.report.table import AscGroup, _device_timing, describe
from tests.agent_thread import served
from tests.drivers.xylo import standin
from tests.drivers.xylo.conftest import tiny_network_parts
from tests.drivers.xylo.standin_afe import AFE_EXTRA_W, LATENCY_S
from tests.drivers.xylo.test_chip_afe import open_chip_driver, shaped_audio

pytestmark = pytest.mark.slow
AFE_RAILS_W = standin.RAIL_WATTS["LogicAfe"] + standin.RAIL_WATTS["IoAfe"]
AFE_EXTRA = sum(AFE_EXTRA_W.values())


@pytest.fixture
def chip_agent():
    calls = standin.Calls()
    driver, _ = open_chip_driver(calls)
    with served(driver, "xylo0") as client:
        yield client, calls


def _resources() -> Any:
    spec = SimpleNamespace(agent="xylo0", power_sample=0, repetitions=2, idle_s=0.4,
                           power_method="repeat",
                           active_s=0.4, boundary="exclude")
    split = type("Split", (), {
        "slices": np.stack([shaped_audio(0), shaped_audio(1)]), "labels": np.array([0, 1]),
        "clip_ids": ["a", "b"], "slice_index": np.array([0, 0]), "__len__": lambda self: 2})
    return SimpleNamespace(spec=spec, model=tiny_network_parts(), test=split())


def test_preprocessing_is_measured_on_the_chip_with_power_from_the_afe_rails(chip_agent):
    client, calls = chip_agent
    caps = client.info["capabilities"]
    assert caps["asc"]["stages"] == ["preprocessing", "inference"]
    docs: list[Any] = []
    res = _resources()
    device = RemoteDevice(client)
    times = run_single_stream_unit(RunContext(DocumentStream([docs.append]), "ss"), res, device)
    samples = [d for d in docs if isinstance(d, Event) and d.name == "sample"]
    assert len(samples) == 2
    for event in samples:
        assert event.data["preprocess_s"] == pytest.approx(1.0)
        assert event.data["preprocess_latency_s"] == pytest.approx(LATENCY_S, abs=1.5e-3)
    pre = next(d for d in docs if isinstance(d, Metric) and d.name == "preprocess_time_s")
    assert pre.value == pytest.approx(1.0) and pre.meta["samples"] == 2

    docs.clear()
    run_power_unit(RunContext(DocumentStream([docs.append]), "pw"), res, 1, device, [], times)
    metrics = {d.name: d for d in docs if isinstance(d, Metric)}
    active = metrics["active_power_w.preprocessing"]
    assert sorted(active.meta["rails_w"]) == ["afe_core", "afe_ldo"]
    assert active.meta["idle_same_rails_w"]["afe_core"] == pytest.approx(
        standin.RAIL_WATTS["LogicAfe"])
    # the AFE records during nearly all of the window (1.25 s of every ~1.35 s)
    assert AFE_RAILS_W + 0.8 * AFE_EXTRA < active.value <= AFE_RAILS_W + AFE_EXTRA * 1.01
    dynamic = metrics["dynamic_power_w.preprocessing"]
    assert 0.8 * AFE_EXTRA < dynamic.value <= AFE_EXTRA * 1.01
    energy = metrics["energy_per_inference_j.preprocessing"]
    assert energy.value == pytest.approx(dynamic.value * 1.0, rel=1e-6)  # × the 1 s window
    # inference is still compared over all four rails
    assert sorted(metrics["active_power_w.inference"].meta["rails_w"]) == [
        "afe_core", "afe_ldo", "io", "snn_core"]
    assert metrics["idle_power_w"].value == pytest.approx(sum(standin.RAIL_WATTS.values()))
    assert calls.names().count("AFESamna") == 1  # calibrated once, for every run

    # the report says which front end was used, that it is real time, and which rails
    stored = {name: {"value": m.value, "unit": m.unit, "uncertainty": m.uncertainty,
                     "meta": m.meta} for name, m in metrics.items()}
    run = {"agents": {"xylo0": {"capabilities": caps}}}
    group = AscGroup(agent="xylo0", power={1: [stored]}, single=[{"samples": {
        "value": 2, "unit": "", "uncertainty": None, "meta": {}}}],
        params={"fixture": True, "sample_rate": 16000}, timing=_device_timing(run, "xylo0"))
    text = " ".join("\n".join(describe(group)).split())
    assert "pre-processing on the chip's analog front end in real time" in text
    assert "preprocessing: its own rails afe_core, afe_ldo" in text
