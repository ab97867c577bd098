"""An LPM01A cassette recorded at the serial line replays the same samples and events, in CI,
without a board and without pyserial."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hilbench.power.source import PowerSourceError
from hilbench.sim.device_feed import DeviceFeed
from hilbench.sim.power_model import ARDUINO_NANO_33_BLE
from hilbench_drivers.lpm01a import Lpm01a, Lpm01aSettings
from hilbench_drivers.lpm01a.cassette import RecordingSerial
from hilbench_drivers.lpm01a.driver import open_serial
from hilbench_drivers.lpm01a.emulator import Lpm01aEmulator
from tests.drivers.lpm01a.conftest import timed_regions
from tests.instrument_cassettes import acquire, run_without, use_instrument_cassette

SETTINGS = Lpm01aSettings(rate_hz=1_000)


def record(folder: Path, settings: Lpm01aSettings = SETTINGS) -> dict:
    with DeviceFeed(ARDUINO_NANO_33_BLE) as feed, \
            Lpm01aEmulator(feed, drift_ppm=30.0, noise_std_a=1e-5, seed=5) as board:
        source = Lpm01a(board.path, settings, port=lambda: RecordingSerial(
            open_serial(board.path, settings.baud), folder, board.path))
        return acquire(source, timed_regions(feed, count=2, region_s=0.01), 0.15)


REPLAY = """
import json
from hilbench_drivers.lpm01a import Lpm01a, Lpm01aSettings
from tests.instrument_cassettes import acquire
source = Lpm01a("replay:{folder}", Lpm01aSettings(rate_hz={rate}))
print(json.dumps(acquire(source, None, 0.0)))
"""


@pytest.mark.parametrize("rate_hz", [1_000, 50_000])
def test_a_fresh_recording_replays_the_same_samples_and_events(tmp_path, rate_hz):
    settings = Lpm01aSettings(rate_hz=rate_hz)
    recorded = record(tmp_path / "lpm", settings)
    assert recorded["samples"] > 0.1 * rate_hz and len(recorded["edges"][0][1]) == 4
    replayed = acquire(Lpm01a(f"replay:{tmp_path / 'lpm'}", settings), None, 0.0)
    assert replayed == recorded | {"span_s": replayed["span_s"]}


def test_the_committed_cassette_replays_without_a_board_or_pyserial(request):
    folder = use_instrument_cassette("lpm01a-emulated", record,
                                     request.config.getoption("--record-mode"))
    expected = json.loads((folder / "expected.json").read_text())
    replayed = run_without(["serial"], REPLAY.format(folder=folder, rate=1000))
    assert replayed["samples"] == expected["samples"] > 0
    assert replayed["values_sha256"] == expected["values_sha256"]
    assert replayed["edges"] == expected["edges"] and replayed["simulated"] is True


def test_a_replay_refuses_a_different_command(tmp_path):
    record(tmp_path / "lpm")
    other = Lpm01a(f"replay:{tmp_path / 'lpm'}", Lpm01aSettings(rate_hz=2_000))
    with pytest.raises(PowerSourceError, match=r"freq 2k.*recording holds.*freq 1k"):
        other.configure()
    other.close()
