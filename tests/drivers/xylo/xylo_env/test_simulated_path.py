"""The simulated back end with the real Rockpool 2.8 / xylosim / AFESim (run in .venv-xylo):
mapping, bit-accurate XyloSim inference, AFE pre-processing and its cache, the driver."""

from __future__ import annotations

import sys
import threading

import numpy as np
import pytest

from hilbench.testing.driver_conformance import check_driver
from hilbench_drivers.xylo import XyloDriver
from hilbench_drivers.xylo.afe import HostFrontEnd
from hilbench_drivers.xylo.cycles import config_view, load_cycles_model
from hilbench_drivers.xylo.network import AfeSettings, XyloNetwork
from hilbench_drivers.xylo.train import build_network, to_network


@pytest.fixture(scope="module")
def network():
    net = build_network((12, 12, 12), 4, 0.01, seed=1)
    return to_network(net, ("airport", "street_traffic", "bus", "park"), 0.01, 16000,
                      AfeSettings(), {"test": True})


@pytest.fixture(scope="module")
def audio():
    from hilbench.workloads.asc.fixture import make_fixture  # noqa: F401  (layout only)

    rng = np.random.default_rng(3)
    t = np.arange(16000) / 16000
    tone = 0.3 * np.sin(2 * np.pi * 700 * t) + 0.05 * rng.standard_normal(16000)
    noise = 0.3 * rng.standard_normal(16000)
    return np.stack([tone, noise]).astype(np.float32)


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return tmp_path_factory.mktemp("afe-cache")


def test_mapping_fits_xylo_audio_2_and_survives_the_file(network, tmp_path):
    assert network.inputs == 16 and network.outputs == 4 and network.hidden == 36
    back = XyloNetwork.load(network.save(tmp_path / "n.npz"))
    assert back.sha256 == network.sha256


def test_mapper_refuses_what_does_not_fit():
    from rockpool.devices.xylo.syns61300.xylo_mapper import DRCError

    too_many_outputs = build_network((8,), 9, 0.01, seed=0)
    with pytest.raises((DRCError, ValueError)):
        to_network(too_many_outputs, tuple("abcdefghi"), 0.01, 16000, AfeSettings(), {})


def test_afesim_spikes_are_rasterised_and_cached(audio, cache, network):
    fe = HostFrontEnd(network.afe, network.dt, 16000, cache)
    first = fe.spikes(audio[0])
    assert not first.cached and first.raster.shape == (100, 16)
    assert first.raster.dtype == np.uint8 and first.raster.max() <= 15
    assert first.raster.sum() > 0  # a 700 Hz tone excites the front end
    again = fe.spikes(audio[0])
    assert again.cached and np.array_equal(again.raster, first.raster)
    assert again.host_s < first.host_s / 10
    # the cache is keyed by content: other audio is simulated anew
    assert fe.key(audio[1]) != fe.key(audio[0])


def test_xylosim_inference_is_the_bit_accurate_simulator(audio, cache, network):
    from rockpool.devices.xylo import syns61201 as x

    driver = XyloDriver(afe_cache=str(cache))
    meta, arrays = network.metadata(), network.arrays()
    names = sorted(arrays)
    driver.load({"workload": "asc", "part": "model", "meta": meta, "arrays": names},
                [arrays[n] for n in names])
    driver.load({"workload": "asc", "part": "sample", "index": 0}, [audio[0]])
    body = driver.run({"workload": "asc", "mode": "single_stream", "index": 0},
                      threading.Event()).body
    raster = HostFrontEnd(network.afe, network.dt, 16000, cache).spikes(audio[0]).raster
    sim = x.XyloSim.from_specification(**network.specification())
    expected = np.asarray(sim.evolve(raster.astype(int))[0]).sum(axis=0)
    assert body["scores"] == [int(v) for v in expected]
    assert body["predicted"] == int(np.argmax(expected))
    # device time = cycle model at the core clock, and the wall clock was held for it
    cycles = body["detail"]["cycles_per_step"] * body["detail"]["steps"]
    assert body["inference_s"] == pytest.approx(cycles / 50e6)
    assert body["t_end"] - body["t_start"] >= body["inference_s"]
    assert body["preprocess_s"] is None and "AFESim" in body["preprocess_reason"]
    assert driver.capabilities()["simulated"] is True
    assert "simulated" in driver.capabilities()["simulation"]


def test_the_simulated_xylo_passes_the_conformance_suite(audio, cache, network):
    driver = XyloDriver(afe_cache=str(cache))
    try:
        assert check_driver(driver, asc_model=network, asc_sample=audio[0]) == []
    finally:
        driver.close()


def test_cycle_model_loads_without_samna_and_leaves_no_trace(network):
    model = load_cycles_model()
    assert "samna" not in sys.modules
    busy, _ = model(config_view(network), 1.0, 1.0, 1.0)
    quiet, _ = model(config_view(network), 0.0, 0.0, 0.0)
    assert busy > quiet > 0  # activity costs cycles

