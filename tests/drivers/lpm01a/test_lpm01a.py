"""The LPM01A driver against its emulator: event-cut windows hold the true energy within the
edge budget plus the stated accuracy; refusals carry the board's reason; pyserial is lazy."""

from __future__ import annotations

import time

import numpy as np
import pytest

from hilbench.power.markers import cut_windows
from hilbench.power.source import PowerSourceError
from hilbench_drivers.lpm01a import Lpm01a, Lpm01aSettings
from hilbench_drivers.lpm01a.protocol import decode_ascii, encode_ascii, encode_binary
from tests.instrument_cassettes import run_without


@pytest.mark.parametrize("rate_hz, output", [(100_000, "current"), (5_000, "energy")])
def test_event_windows_hold_the_true_energy(feed, board, rate_hz, output):
    source = Lpm01a(board.path, Lpm01aSettings(rate_hz=rate_hz, output=output))
    source.configure()
    source.arm()
    source.start()
    time.sleep(0.03)
    truth = []
    for _ in range(4):
        t_on = feed.mark(1)
        feed.mark(0, t_on + 1e-4)
        feed.set_state("inference", t_on)
        time.sleep(0.012)
        t_off = feed.mark(1)
        feed.mark(0, t_off + 1e-4)
        feed.set_state("idle", t_off)
        truth.append((t_on, t_off))
        time.sleep(0.01)
    batches = [source.read()]
    time.sleep(0.03)
    batches.append(source.stop())
    (events,) = source.markers()
    info = source.info
    source.close()
    values = np.concatenate([b.values for b in batches])
    watts = values * info.supply_voltage_v if info.unit == "A" else values
    windows = cut_windows(events, sample_period_s=info.sample_period_s,
                          marker_latency_s=info.marker_latency_s, pairing="alternate")
    assert len(windows) == 4
    for window, (t_on, t_off) in zip(windows, truth, strict=True):
        true = feed.true_energy(t_on, t_off)
        budget = window.edge_energy_uncertainty_j(watts) + info.accuracy_relative * true
        assert abs(window.energy_j(watts) - true) <= budget


def test_the_board_refusal_is_named(board):
    source = Lpm01a(board.path, Lpm01aSettings(rate_hz=10_000, data_format="bin_hexa",
                                                output="energy"))
    source.configure()
    source.arm()
    board._config.freq_hz = 20_000  # the board disagrees with what the driver set
    with pytest.raises(PowerSourceError, match="refused 'start': output energy is limited"):
        source.start()
    source.close()


def test_settings_are_checked_by_name():
    with pytest.raises(ValueError, match="rate_hz 3000 is not a PowerShield frequency"):
        Lpm01aSettings(rate_hz=3000)
    with pytest.raises(ValueError, match="ascii_dec above 5000 Hz"):
        Lpm01aSettings(rate_hz=20_000, data_format="ascii_dec")
    with pytest.raises(ValueError, match="unknown LPM01A setting"):
        Lpm01aSettings.from_mapping({"freq": 1000})
    with pytest.raises(ValueError, match="supply_voltage_v"):
        Lpm01aSettings(supply_voltage_v=5.0)


def test_sample_encodings_round_trip_within_their_resolution():
    for value in (640.9e-6, 0.0301, 2.5e-9):
        assert decode_ascii(encode_ascii(value).decode().strip()) == pytest.approx(value, 5e-4)
    raw = np.frombuffer(encode_binary(np.array([640.9e-6, 0.0301])), np.uint8)
    assert raw[0] >> 4 != 0xF and raw[2] >> 4 != 0xF  # never a metadata header


def test_a_silent_port_is_a_clear_error(tmp_path):
    import os
    import pty

    master, slave = pty.openpty()
    try:
        source = Lpm01a(os.ttyname(slave), Lpm01aSettings(timeout_s=0.3))
        with pytest.raises(PowerSourceError, match="no answer from the LPM01A"):
            source.configure()
        source.close()
    finally:
        os.close(master)
        os.close(slave)


def test_without_pyserial_the_driver_imports_and_says_what_to_install():
    said = run_without(["serial"], (
        "import json\n"
        "from hilbench_drivers.lpm01a import Lpm01a, Lpm01aSettings\n"
        "from hilbench.power.source import PowerSourceError\n"
        "try:\n    Lpm01a('/dev/ttyACM0', Lpm01aSettings()).configure()\n"
        "except PowerSourceError as e:\n    print(json.dumps(str(e)))\n"))
    assert "pip install hilbench[lpm01a]" in said
