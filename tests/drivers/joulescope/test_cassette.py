"""A JS220 cassette recorded at the driver-API boundary replays the same samples and marker
edges, in CI, without pyjoulescope_driver."""

from __future__ import annotations

import json
import time
from pathlib import Path

from hilbench.sim.device_feed import DeviceFeed
from hilbench.sim.js220 import SimulatedJs220Driver
from hilbench.sim.power_model import ARDUINO_NANO_33_BLE
from hilbench_drivers.joulescope import Joulescope220, Js220Settings
from hilbench_drivers.joulescope.cassette import RecordingApi
from tests.instrument_cassettes import acquire, run_without, use_instrument_cassette

SETTINGS = Js220Settings(rate_hz=10_000)


def record(folder: Path) -> dict:
    with DeviceFeed(ARDUINO_NANO_33_BLE) as feed:
        sim = SimulatedJs220Driver(feed, drift_ppm=40.0, noise_std_w=1e-4, seed=5)

        def pulses() -> None:
            for _ in range(2):
                feed.mark(1, feed.set_state("inference"))
                time.sleep(0.01)
                feed.mark(0, feed.set_state("idle"))
                time.sleep(0.01)

        source = Joulescope220("", SETTINGS, api=lambda: RecordingApi(sim, folder))
        return acquire(source, pulses, 0.15)


REPLAY = """
import json
from hilbench_drivers.joulescope import Joulescope220, Js220Settings
from tests.instrument_cassettes import acquire
source = Joulescope220("replay:{folder}", Js220Settings(rate_hz=10_000))
print(json.dumps(acquire(source, None, 0.0)))
"""


def test_a_fresh_recording_replays_the_same_samples_and_edges(tmp_path):
    recorded = record(tmp_path / "js220")
    assert recorded["samples"] > 1000 and len(recorded["edges"][0][1]) == 4
    replayed = acquire(Joulescope220(f"replay:{tmp_path / 'js220'}", SETTINGS), None, 0.0)
    assert replayed == recorded | {"span_s": replayed["span_s"]}
    assert abs(replayed["span_s"] - recorded["span_s"]) < 1e-9


def test_the_committed_cassette_replays_without_the_vendor_library(request):
    folder = use_instrument_cassette("js220-sim", record,
                                     request.config.getoption("--record-mode"))
    expected = json.loads((folder / "expected.json").read_text())
    replayed = run_without(["pyjoulescope_driver"], REPLAY.format(folder=folder))
    assert replayed["samples"] == expected["samples"] > 0
    assert replayed["values_sha256"] == expected["values_sha256"]
    assert replayed["edges"] == expected["edges"] and replayed["simulated"] is True


def test_a_replay_refuses_a_different_dialogue(tmp_path):
    import pytest

    from hilbench.power.source import PowerSourceError

    record(tmp_path / "js220")
    other = Joulescope220(f"replay:{tmp_path / 'js220'}", Js220Settings(rate_hz=20_000))
    with pytest.raises(PowerSourceError, match=r"h/fs.*20000.*recording holds.*10000"):
        other.configure()
