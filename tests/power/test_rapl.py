"""RAPL through a directory tree that imitates /sys/class/powercap (fixtures in conftest)."""

from __future__ import annotations

import os
import time
from pathlib import Path

import numpy as np
import pytest

from hilbench import clock
from hilbench.power import rapl
from hilbench.power.rapl import RaplCounters, RaplPowerSource, RaplUnavailable, probe_rapl
from hilbench.power.source import PowerSource, PowerSourceError

# Counter ranges the conftest tree uses (real values from a desktop package / client DRAM).
PACKAGE_RANGE = 262_143_328_850
DRAM_RANGE = 65_712_999_613


def test_client_layout_sums_package_and_dram_only(fake_powercap) -> None:
    counters = RaplCounters.discover(fake_powercap.root)
    assert counters.domains == ("package-0", "dram-0")
    a = counters.snapshot()
    fake_powercap.set_energy("intel-rapl:0", 1_000_000 + 3_000_000)  # +3 J package
    fake_powercap.set_energy("intel-rapl:0:0", 600_000 + 2_000_000)  # core: inside package
    fake_powercap.set_energy("intel-rapl:0:1", 100_000 + 500_000)  # uncore: inside package
    fake_powercap.set_energy("intel-rapl:0:2", 200_000 + 1_500_000)  # +1.5 J DRAM
    fake_powercap.set_energy("intel-rapl:1", 5_000_000 + 9_000_000)  # psys: whole platform
    b = counters.snapshot()
    assert counters.energy_between(a, b) == pytest.approx({"package-0": 3.0, "dram-0": 1.5})
    assert counters.total_joules(a, b) == pytest.approx(4.5)


def test_left_out_zones_are_listed_with_the_reason(fake_powercap) -> None:
    skipped = " | ".join(RaplCounters.discover(fake_powercap.root).skipped)
    assert "intel-rapl:0:0 (core: nested in package)" in skipped
    assert "intel-rapl:0:1 (uncore: nested in package)" in skipped
    assert "intel-rapl:1 (psys" in skipped
    assert "intel-rapl-mmio:0 (mmio" in skipped


def test_psys_only_when_asked(fake_powercap) -> None:
    counters = RaplCounters.discover(fake_powercap.root, include_psys=True)
    assert "psys" in counters.domains


def test_multi_socket_counts_each_package_and_dram_once(empty_powercap) -> None:
    for socket in (0, 1):
        empty_powercap.add_zone(f"intel-rapl:{socket}", f"package-{socket}")
        empty_powercap.add_zone(f"intel-rapl:{socket}:0", "dram", 0, DRAM_RANGE)
    counters = RaplCounters.discover(empty_powercap.root)
    assert sorted(counters.domains) == ["dram-0", "dram-1", "package-0", "package-1"]
    a = counters.snapshot()
    for zone_id in ("intel-rapl:0", "intel-rapl:0:0", "intel-rapl:1", "intel-rapl:1:0"):
        empty_powercap.set_energy(zone_id, 2_000_000)
    assert counters.total_joules(a, counters.snapshot()) == pytest.approx(8.0)


def test_tree_without_flat_links_is_read_once(tmp_path: Path) -> None:
    package = tmp_path / "intel-rapl:0"
    dram = package / "intel-rapl:0:2"
    for zone, name in ((package, "package-0"), (dram, "dram")):
        zone.mkdir(parents=True)
        (zone / "name").write_text(name + "\n")
        (zone / "energy_uj").write_text("0\n")
        (zone / "max_energy_range_uj").write_text(f"{PACKAGE_RANGE}\n")
    assert RaplCounters.discover(tmp_path).domains == ("package-0", "dram-0")


def test_counter_wraparound_adds_the_range(fake_powercap) -> None:
    fake_powercap.set_energy("intel-rapl:0", PACKAGE_RANGE - 1_000_000)
    fake_powercap.set_energy("intel-rapl:0:2", DRAM_RANGE - 250_000)
    counters = RaplCounters.discover(fake_powercap.root)
    a = counters.snapshot()
    fake_powercap.set_energy("intel-rapl:0", 2_000_000)  # wrapped: 1 J before + 2 J after
    fake_powercap.set_energy("intel-rapl:0:2", 250_000)  # wrapped: 0.25 J + 0.25 J
    joules = counters.energy_between(a, counters.snapshot())
    assert joules == pytest.approx({"package-0": 3.0, "dram-0": 0.5})


def test_safe_snapshot_gap_is_set_by_the_smallest_range(fake_powercap) -> None:
    counters = RaplCounters.discover(fake_powercap.root)
    # DRAM's counter wraps first: 65.7 kJ at 100 W lasts 657 s.
    assert counters.wrap_period_s(100.0) == pytest.approx(DRAM_RANGE * 1e-6 / 100.0)


def test_missing_powercap_says_why(tmp_path: Path) -> None:
    missing = tmp_path / "no-such-powercap"
    counters, reason = probe_rapl(missing)
    assert counters is None
    assert str(missing) in reason
    assert "modprobe intel_rapl_msr" in reason


def test_only_mmio_zone_is_reported_not_used(empty_powercap) -> None:
    empty_powercap.add_zone("intel-rapl-mmio:0", "package-0")
    with pytest.raises(RaplUnavailable, match="intel-rapl-mmio:0"):
        RaplCounters.discover(empty_powercap.root)


def test_unreadable_energy_counter_names_file_and_fix(
    fake_powercap, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = fake_powercap.energy_path("intel-rapl:0")
    if os.geteuid() == 0:
        # root reads any file regardless of mode; make the read fail the way EACCES does.
        real_read = rapl._read_text

        def deny(path: Path) -> str:
            if path == target:
                raise PermissionError(13, "Permission denied", str(path))
            return real_read(path)

        monkeypatch.setattr(rapl, "_read_text", deny)
    else:
        target.resolve().chmod(0o000)
    counters, reason = probe_rapl(fake_powercap.root)
    assert counters is None
    assert f"cannot read {target}: permission denied" in reason
    assert "Linux 5.10" in reason and "root" in reason and "chmod" in reason


def test_garbled_counter_names_file_and_content(fake_powercap) -> None:
    (fake_powercap.root / "intel-rapl:0:2" / "energy_uj").write_text("n/a\n")
    with pytest.raises(RaplUnavailable, match=r"intel-rapl:0:2/energy_uj holds 'n/a'"):
        RaplCounters.discover(fake_powercap.root)


def test_energy_between_rejects_reversed_snapshots(fake_powercap) -> None:
    counters = RaplCounters.discover(fake_powercap.root)
    a = counters.snapshot()
    b = counters.snapshot()
    with pytest.raises(ValueError, match="earlier"):
        counters.energy_between(b, a)


# --- the polling power source ------------------------------------------------------------------


def test_source_reports_average_watts_on_the_orchestrator_clock(
    fake_powercap,
) -> None:
    source = RaplPowerSource(interval_s=0.02, root=fake_powercap.root)
    assert isinstance(source, PowerSource)
    source.configure()
    assert source.info.unit == "W"
    assert source.info.domains == ("package-0", "dram-0")
    assert source.info.time_resolution_s == 0.02

    with fake_powercap.drawing({"intel-rapl:0": 25.0}):
        t_start = clock.now()
        source.start()
        batches = []
        for _ in range(1000):  # bounded: a broken poller fails the test instead of hanging it
            batches.append(source.read())
            if sum(len(b) for b in batches) >= 15:
                break
            time.sleep(0.01)
        batches.append(source.stop())
        t_stop = clock.now()

    t = np.concatenate([b.t for b in batches])
    w = np.concatenate([b.values for b in batches])
    assert np.all(np.diff(t) > 0)
    assert t[0] > t_start and t[-1] < t_stop
    # Energy over the polled span by its length, as a window's figure is taken: a plain mean of
    # the samples lets the last, partial interval (stop may close it after a fraction of a
    # millisecond, between two of the imitation's counter steps) weigh as much as a full one.
    covered = float(np.sum(w[:-1] * np.diff(t)) / (t[-1] - t[0]))
    assert covered == pytest.approx(25.0, rel=0.15)
    assert source.health().ok


def test_counter_failure_mid_run_marks_health(fake_powercap) -> None:
    source = RaplPowerSource(interval_s=0.01, root=fake_powercap.root)
    source.start()
    (fake_powercap.root / "intel-rapl:0" / "energy_uj").write_text("garbage\n")
    source.stop()
    health = source.health()
    assert not health.ok
    assert "intel-rapl:0/energy_uj" in health.messages[0]


def test_unconfigurable_source_raises_power_source_error(tmp_path: Path) -> None:
    source = RaplPowerSource(root=tmp_path / "absent")
    with pytest.raises(PowerSourceError, match="absent does not exist"):
        source.configure()


def _late_polled_counter(watts: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Readings of a counter drawing ``watts``, polled every 0.1 s by a poller that a busy host
    holds up by up to 0.4 s one poll in five: each reading is the energy up to the next poll
    over that span, as RaplPowerSource takes it."""
    rng = np.random.default_rng(seed)
    late = np.where(rng.random(60) < 0.2, rng.uniform(0.05, 0.4, 60), 0.0)
    polls = np.cumsum(0.1 + late)
    energy = watts * polls
    return polls[:-1], np.diff(energy) / np.diff(polls)


def test_a_rapl_window_polled_late_on_a_busy_host_keeps_its_figure(fake_powercap) -> None:
    from dataclasses import replace

    from hilbench.power.estimators import PhaseWindow, phase_power

    source = RaplPowerSource(interval_s=0.1, root=fake_powercap.root)
    source.configure()
    assert source.info.readings_tile_time  # declared by the source, stored with its samples
    t, w = _late_polled_counter(25.0, seed=3)
    window = PhaseWindow("active", float(t[0]), float(t[-1]) + 0.1)
    estimate = phase_power(t, w, window, source.info)
    assert estimate.coverage == pytest.approx(1.0)
    assert estimate.mean_w == pytest.approx(25.0)
    # The same spacing from a meter would be readings lost, and the window refused.
    with pytest.raises(ValueError, match="cover"):
        phase_power(t, w, window, replace(source.info, readings_tile_time=False))


def test_a_late_reading_weighs_by_the_time_it_spans_so_the_figure_is_energy_over_time(
        fake_powercap) -> None:
    """A power rising from 10 to 40 W while the work makes the host late for two polls in five
    (second half only): a late reading spans more of the window, and more of its energy. The
    figure is the window's energy over its length; the plain mean of the readings is 2 W low,
    far outside the stated uncertainty, and a replay recomputes the same figure."""
    from hilbench.cassette.figures import window_power_again
    from hilbench.power.estimators import PhaseWindow, phase_power

    source = RaplPowerSource(interval_s=0.1, root=fake_powercap.root)
    source.configure()
    rng = np.random.default_rng(0)
    n = 80
    late = np.where((np.arange(n) >= n // 2) & (rng.random(n) < 0.4),
                    rng.uniform(0.05, 0.4, n), 0.0)
    polls = np.cumsum(0.1 + late)
    energy = 10.0 * polls + 15.0 * polls**2 / polls[-1]  # P(t) = 10 W + 30 W * t / T
    t, w = polls[:-1], np.diff(energy) / np.diff(polls)  # each reading: to the next poll
    window = PhaseWindow("active", float(t[0]), float(t[-1]))
    truth = (energy[-2] - energy[0]) / (t[-1] - t[0])

    estimate = phase_power(t, w, window, source.info, timing_uncertainty_s=1e-3)
    assert estimate.mean_w == pytest.approx(truth, rel=1e-9)
    assert abs(float(np.mean(w[:-1])) - truth) > 1.5 > 5 * estimate.uncertainty95
    meta = {"instrument": "rapl", "time_resolution_s": 0.1, "readings_tile_time": True}
    again = window_power_again(t, w, "rapl", "W", meta, (window.start, window.end), 0.0, [],
                               {"timing_uncertainty_s": 1e-3})
    assert again.mean_w == estimate.mean_w


def test_a_replay_recomputes_a_late_polled_rapl_window_with_the_runs_rule() -> None:
    from hilbench.cassette.figures import window_power_again

    t, w = _late_polled_counter(25.0, seed=4)
    region = (float(t[0]), float(t[-1]) + 0.1)
    meta = {"instrument": "rapl", "time_resolution_s": 0.1, "readings_tile_time": True}
    again = window_power_again(t, w, "rapl", "W", meta, region, 0.0, [], {})
    assert again.coverage == pytest.approx(1.0) and again.mean_w == pytest.approx(25.0)
    del meta["readings_tile_time"]  # samples stored by a meter: the spacing is lost readings
    with pytest.raises(ValueError, match="cover"):
        window_power_again(t, w, "rapl", "W", meta, region, 0.0, [], {})
