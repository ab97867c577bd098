"""The Table-6 measurement description says what the Xylo really did: the model's own line
(a spiking network, not MFE + CNN) and the device's own timing line (AFE on the host, not
measured), both taken from what a run stores (params, agent capabilities)."""

from __future__ import annotations

from hilbench.workloads.asc.report.table import AscGroup, _device_timing, describe
from tests.drivers.xylo import standin
from tests.drivers.xylo.conftest import tiny_network_parts
from tests.drivers.xylo.test_hardware import open_driver


def _single(n: int) -> dict:
    return {"samples": {"value": n, "unit": "", "uncertainty": None, "meta": {}}}


def test_xylo_rows_say_host_afe_not_measured_and_the_spiking_network():
    driver, _ = open_driver(standin.Calls())
    net = tiny_network_parts()
    run = {"agents": {"xylo0": {"capabilities": driver.capabilities()}}}
    group = AscGroup(agent="xylo0", single=[_single(10)],
                     params={"fixture": True, "sample_rate": 16000,
                             "model_description": net.description},
                     timing=_device_timing(run, "xylo0"))
    text = "\n".join(describe(group))
    assert "MFE" not in text and "int8 CNN" not in text
    assert "timed on the device's clock" not in text
    assert "pre-processing not measured" in text and "AFESim" in text
    assert "XyloSamna.evolve" in text  # hardware back end: inference timed around evolve
    assert "spiking network for Xylo Audio 2 (16-12-4" in text


def test_a_device_that_declares_nothing_keeps_the_device_clock_line():
    assert _device_timing({"agents": {"cpu0": {"capabilities": {"asc": {}}}}}, "cpu0") == \
        "pre-processing and inference timed on the device's clock"
