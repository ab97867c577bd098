"""On hardware the power procedure takes idle and active power from the HDK's on-board monitor
(per rail) when no external meter measures the agent: the xylo driver on the samna/Rockpool
stand-in, served by a real agent over ZeroMQ, through ``asc.power`` and into the table."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from hilbench.contracts.remote import RemoteDevice
from hilbench.documents import DocumentStream, Event, Metric
from hilbench.orchestrator.phases import RunContext
from hilbench.procedures.asc_power import run_power_unit
from hilbench.procedures.asc_single_stream import StageTimes
from hilbench.report.asc_table import AscGroup, asc_table, describe
from hilbench.report.render import render_text
from tests.agent_thread import served
from tests.drivers.xylo import standin
from tests.drivers.xylo.conftest import tiny_network_parts
from tests.drivers.xylo.test_hardware import open_driver

IDLE_W = sum(standin.RAIL_WATTS.values())
EXTRA_W = standin.ACTIVE_EXTRA_W["Logic"]
INFERENCE_S = 0.021


@pytest.fixture
def hdk_agent():
    driver, _ = open_driver(standin.Calls())
    raster = np.zeros((100, 16), np.uint8)
    raster[:, 3] = 2
    # The host AFE (AFESim) needs Rockpool; it is tested in the Xylo environment.
    driver._spikes = lambda audio: (raster, {"afe_cached": True})
    with served(driver, "xylo0") as client:
        yield client


def _resources() -> Any:
    spec = SimpleNamespace(agent="xylo0", power_sample=0, repetitions=2, idle_s=0.4,
                           power_method="repeat",
                           active_s=0.4, boundary="exclude")
    split = type("Split", (), {"slices": np.zeros((3, 16000), np.float32),
                               "clip_ids": ["a", "a", "b"], "__len__": lambda self: 3})
    return SimpleNamespace(spec=spec, model=tiny_network_parts(), test=split())


TIMES = StageTimes("ss", {"preprocessing": (None, None), "inference": (INFERENCE_S, 0.0005)}, 3)


def test_idle_and_active_power_come_from_the_boards_rails(hdk_agent):
    assert hdk_agent.info["capabilities"]["asc"]["onboard_power"] is True
    docs: list[Any] = []
    ctx = RunContext(DocumentStream([docs.append]), "run")
    run_power_unit(ctx, _resources(), 1, RemoteDevice(hdk_agent), [], TIMES)
    metrics = {d.name: d for d in docs if isinstance(d, Metric)}
    idle, active = metrics["idle_power_w"], metrics["active_power_w.inference"]
    assert idle.meta["category"] == "on-board instrument"
    assert idle.meta["rails"] == ["afe_core", "afe_ldo", "io", "snn_core"]
    assert idle.value == pytest.approx(IDLE_W, rel=1e-9)  # the rails' sum, network ready
    assert idle.meta["rails_w"]["snn_core"] == pytest.approx(standin.RAIL_WATTS["Logic"])
    # the SNN core computes most of the active window (20 ms evolve per sample)
    assert IDLE_W + 0.5 * EXTRA_W < active.value <= IDLE_W + EXTRA_W
    assert active.meta["rails_w"]["io"] == pytest.approx(standin.RAIL_WATTS["Io"])
    dynamic = metrics["dynamic_power_w.inference"]
    assert dynamic.value == pytest.approx(active.value - idle.value)
    energy = metrics["energy_per_inference_j.inference"]
    assert energy.value == pytest.approx(dynamic.value * INFERENCE_S)
    assert metrics["energy_per_inference_j.preprocessing"].value is None
    assert "internal_active_power_w.inference" not in metrics  # not counted twice
    events = [d for d in docs if isinstance(d, Event) and d.name == "idle_window"]
    assert len(events) == 2 and all(e.data["power"]["measured"] for e in events)

    stored = {name: {"value": m.value, "unit": m.unit, "uncertainty": m.uncertainty,
                     "meta": m.meta} for name, m in metrics.items()}
    group = AscGroup(agent="xylo0", power={1: [stored]},
                     params={"fixture": True, "sample_rate": 16000})
    text = " ".join("\n".join(describe(group)).split())
    assert "ON-BOARD INSTRUMENT: the device's on-board power monitor (4 rails at 50 Hz)" in text
    assert "snn_core 180" in text and "calibration accuracy is not stated" in text
    assert "351" in render_text(asc_table(group, "t"))  # idle 0.351 mW in the table

