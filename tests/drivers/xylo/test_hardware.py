"""The hardware path against a stand-in for samna/Rockpool (see standin.py for the sources):
call order, arguments, units, per-rail on-board power, idle with the network ready, streams."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from hilbench.agent.driver import DriverError
from hilbench_drivers.xylo import XyloDriver, hardware
from hilbench_drivers.xylo.hardware import HardwareXylo, VendorModules
from tests.drivers.xylo import standin
from tests.drivers.xylo.conftest import tiny_network_parts


def open_driver(calls, **kw):
    fake = standin.make_modules(calls, **kw)
    modules = VendorModules(samna=fake.samna, xylo=fake.xylo)
    device = HardwareXylo.open(core_clock_mhz=25.0, power_hz=50.0, modules=modules)
    return XyloDriver(backend="hardware", device=device), fake


def load_network(driver, net):
    meta, arrays = net.metadata(), net.arrays()
    names = sorted(arrays)
    return driver.load({"workload": "asc", "part": "model", "meta": meta, "arrays": names},
                       [arrays[n] for n in names]).body


def hold(driver, raster_winner: int, index: int = 0):
    """Put a sample in device memory whose spikes favour one input channel."""
    raster = np.zeros((100, 16), np.uint8)
    raster[:, raster_winner] = 3
    driver._held[index] = raster  # the AFE path is tested in the Rockpool environment
    return raster


def test_call_order_clock_and_configuration():
    calls = standin.Calls()
    driver, fake = open_driver(calls)
    net = tiny_network_parts()
    reply = load_network(driver, net)
    assert calls.names() == ["find_xylo_hdks", "set_xylo_core_clock_freq", "set_power_measure",
                             "config_from_specification", "XyloSamna"]
    assert fake.board.wait_period == 1 and reply["detail"]["core_clock_mhz"] == 25.0
    config_call = dict(calls.log)["config_from_specification"]
    assert config_call == {"kwargs": [], "bias_hidden": True}  # bias reaches the chip
    assert dict(calls.log)["XyloSamna"] == {"dt": net.dt, "output_mode": "Spike",
                                            "power_frequency": 50.0}
    assert driver.capabilities()["simulated"] is False


def test_single_stream_on_the_hdk_predicts_and_times_on_the_agent_clock():
    calls = standin.Calls()
    driver, _ = open_driver(calls)
    load_network(driver, tiny_network_parts())
    hold(driver, raster_winner=6)
    body = driver.run({"workload": "asc", "mode": "single_stream", "index": 0},
                      threading.Event()).body
    assert body["predicted"] == 6 % 4 and body["scores"][2] == 100
    assert 0.015 < body["inference_s"] < 0.5  # the stand-in evolve takes 20 ms
    assert body["t_end"] - body["t_start"] == pytest.approx(body["inference_s"])
    assert body["preprocess_s"] is None and "AFESim" in body["preprocess_reason"]
    assert calls.log[-1] == ("evolve", (100, 16))


def test_on_board_power_per_rail_idle_ready_and_active():
    calls = standin.Calls()
    driver, _ = open_driver(calls)
    load_network(driver, tiny_network_parts())
    hold(driver, raster_winner=1)
    idle = driver.run({"workload": "asc", "mode": "repeat", "stage": "idle",
                       "duration_s": 0.3}, threading.Event()).body
    power = idle["power"]
    assert power["measured"] and set(power["rails_w"]) == {"io", "snn_core", "afe_core",
                                                            "afe_ldo"}
    assert power["rails_w"]["snn_core"] == pytest.approx(standin.RAIL_WATTS["Logic"])
    assert power["avg_power_w"] == pytest.approx(sum(standin.RAIL_WATTS.values()))
    active = driver.run({"workload": "asc", "mode": "repeat", "stage": "inference",
                         "duration_s": 0.3, "index": 0}, threading.Event()).body
    rails = active["power"]["rails_w"]
    # the SNN core rail rises while it computes (busy most of the window)
    assert rails["snn_core"] > standin.RAIL_WATTS["Logic"] + 0.5 * standin.ACTIVE_EXTRA_W["Logic"]
    assert rails["io"] == pytest.approx(standin.RAIL_WATTS["Io"])
    assert active["iterations"] >= 5 and active["mean_s"] > 0.015


def test_stream_of_ten_samples_divides_time_by_samples():
    calls = standin.Calls()
    driver, _ = open_driver(calls)
    load_network(driver, tiny_network_parts())
    driver._stream = [(i, hold(driver, i, index=99)) for i in range(10)]
    driver._held.clear()
    body = driver.run({"workload": "asc", "mode": "stream", "stage": "inference",
                       "duration_s": 0.05}, threading.Event()).body
    assert body["stream_samples"] == 10 and body["indices"] == list(range(10))
    assert body["iterations"] >= 1
    evolves = [d for n, d in calls.log if n == "evolve"]
    assert len(evolves) == body["iterations"]  # one sample per evolve: batch size 1
    assert all(shape == (100, 16) for shape in evolves)


def test_no_hdk_lists_usb_devices(monkeypatch):
    calls = standin.Calls()
    fake = standin.make_modules(calls, boards=0)
    monkeypatch.setattr(hardware, "usb_listing", lambda: ["1d6b:0002 Linux Foundation hub"])
    with pytest.raises(DriverError, match=r"(?s)no Xylo Audio 2 HDK .*found: none.*1d6b:0002"):
        HardwareXylo.open(modules=VendorModules(samna=fake.samna, xylo=fake.xylo))


def test_other_xylo_boards_are_not_taken_for_an_audio_2():
    fake = standin.make_modules(standin.Calls(), version="syns63300")
    with pytest.raises(DriverError, match="found: syns63300"):
        HardwareXylo.open(modules=VendorModules(samna=fake.samna, xylo=fake.xylo))


def test_usb_listing_reads_pyusb(monkeypatch):
    class Dev:
        idVendor, idProduct, iManufacturer, iProduct = 0x04B4, 0x00F1, 1, 2

    core = type("core", (), {"find": staticmethod(lambda find_all: iter([Dev()]))})
    util = type("util", (), {"get_string": staticmethod(
        lambda dev, i: {1: "SynSense", 2: "Xylo A2 HDK"}[i])})
    monkeypatch.setattr(hardware.vendor, "require",
                        lambda pkg, mod=None: core if mod == "usb.core" else util)
    assert hardware.usb_listing() == ["04b4:00f1 SynSense Xylo A2 HDK"]
