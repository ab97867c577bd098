"""Intel SoC Watch: parsing its summary and trace files, and running it (a stand-in on PATH)."""

from __future__ import annotations

import re
import stat
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from hilbench.power.socwatch import (
    SocWatchError,
    SocWatchPowerSource,
    SocWatchRun,
    SocWatchUnavailable,
    component_domain,
    domain_timelines,
    parse_summary_csv,
    parse_trace_csv,
    to_timeline,
)
from hilbench.power.source import PowerSource

DATA = Path(__file__).parent / "data"


def test_component_names_map_to_domains() -> None:
    assert component_domain("CPU/Package_1 ") == "package-1"
    assert component_domain("DRAM/DRAM_0") == "dram-0"
    assert component_domain("DRAM") == "dram-0"
    assert component_domain("CPU/Package_0/Core_3") is None


def test_summary_gives_average_package_and_dram_power() -> None:
    summary = parse_summary_csv(DATA / "socwatch_power.csv")
    assert summary.average_w == pytest.approx({"package-0": 38.5, "dram-0": 4.15})
    assert summary.total_j == pytest.approx({"package-0": 38.5, "dram-0": 4.15})


def test_trace_gives_per_sample_power_in_the_file_time_base() -> None:
    trace = parse_trace_csv(DATA / "socwatch_power_trace.csv")
    assert trace.domains == ("package-0", "dram-0")  # the temperature section is not power
    package = trace.series["package-0"]
    np.testing.assert_allclose(package.t_start_s, [0.0, 0.25, 0.5, 0.75])
    np.testing.assert_allclose(package.t_end_s, [0.25, 0.5, 0.75, 1.0])
    np.testing.assert_allclose(package.watts, [12.0, 52.0, 50.0, 40.0])


def test_trace_and_summary_of_one_collection_agree() -> None:
    trace = parse_trace_csv(DATA / "socwatch_power_trace.csv")
    summary = parse_summary_csv(DATA / "socwatch_power.csv")
    for domain, series in trace.series.items():
        assert series.joules == pytest.approx(summary.total_j[domain])


def test_energy_columns_are_divided_by_the_sample_duration() -> None:
    trace = parse_trace_csv(DATA / "socwatch_energy_trace.csv")
    assert trace.domains == ("package-0", "package-1")
    np.testing.assert_allclose(trace.series["package-0"].watts, [20.0, 30.0, 25.0])
    np.testing.assert_allclose(trace.series["package-1"].watts, [10.0, 10.0, 10.0])


def test_samples_land_on_the_orchestrator_timeline() -> None:
    trace = parse_trace_csv(DATA / "socwatch_power_trace.csv")
    start = 5000.0  # orchestrator clock when collection began
    per_domain = domain_timelines(trace, start)
    np.testing.assert_allclose(per_domain["dram-0"].t, [5000.0, 5000.5])

    total = to_timeline(trace, start)
    # Each sample is stamped at the start of its interval, like a meter reading.
    np.testing.assert_allclose(total.t, [5000.0, 5000.25, 5000.5, 5000.75])
    # DRAM's 0.5 s samples are spread over the package's 0.25 s grid without changing energy.
    np.testing.assert_allclose(total.values, [15.0, 55.0, 55.3, 45.3])
    energy = float(np.sum(total.values * 0.25))
    assert energy == pytest.approx(sum(s.joules for s in trace.series.values()))


def test_timeline_of_one_domain_only() -> None:
    trace = parse_trace_csv(DATA / "socwatch_power_trace.csv")
    dram = to_timeline(trace, 0.0, domains=["dram-0"])
    np.testing.assert_allclose(dram.values, [3.0, 5.3])
    with pytest.raises(SocWatchError, match="dram-1"):
        to_timeline(trace, 0.0, domains=["dram-1"])


def test_garbled_value_names_file_and_line() -> None:
    path = DATA / "socwatch_garbled_trace.csv"
    with pytest.raises(SocWatchError, match=re.escape(f"{path}:6: Power (mW) is '52#00.00'")):
        parse_trace_csv(path)


def test_short_row_names_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "short_trace.csv"
    lines = (DATA / "socwatch_power_trace.csv").read_text().splitlines()
    lines[13] = "2, 500000.00, 250.00"  # line 14: package sample 2 without its power
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(SocWatchError, match=rf"{re.escape(str(path))}:14: .*expects 4 values"):
        parse_trace_csv(path)


def test_summary_is_not_mistaken_for_a_trace() -> None:
    with pytest.raises(SocWatchError, match="no SoC Watch trace sections"):
        parse_trace_csv(DATA / "socwatch_power.csv")


def test_trace_without_power_says_to_collect_power(tmp_path: Path) -> None:
    path = tmp_path / "cstates_trace.csv"
    path.write_text(
        "Core C-State (OS) - CPU/Package_0/Core_0\n"
        "Sample #, Continuous Time (ms), Duration (ms), C-State\n"
        "1, 10.0, 10.0, CC6\n"
    )
    with pytest.raises(SocWatchError, match="-f power"):
        parse_trace_csv(path)


def test_summary_without_power_tables_fails_clearly(tmp_path: Path) -> None:
    path = tmp_path / "other.csv"
    path.write_text("name,value\nx,1\n")
    with pytest.raises(SocWatchError, match=re.escape(f"{path}: no package or DRAM row")):
        parse_summary_csv(path)


# --- running socwatch --------------------------------------------------------------------------

FAKE_SOCWATCH = """\
#!{python}
# Stands in for Intel's socwatch: records its arguments, optionally waits for Ctrl-C (SIGINT)
# or fails, then writes the result files the real tool would write for '-r int -o PREFIX'.
import shutil, signal, sys, threading, pathlib
args = sys.argv[1:]
data = pathlib.Path({data!r})
prefix = pathlib.Path(args[args.index("-o") + 1])
stopped = threading.Event()
signal.signal(signal.SIGINT, lambda *_: stopped.set())
pathlib.Path({argv_log!r}).write_text("\\n".join(args))  # also says: ready for Ctrl-C
if {mode!r} == "fail":
    print("ERROR: the SoC Watch driver is not loaded (insmod-socwatch)")
    sys.exit(2)
if {mode!r} == "wait":
    stopped.wait(60)
shutil.copy(data / "socwatch_power.csv", str(prefix) + ".csv")
shutil.copy(data / "socwatch_power_trace.csv", str(prefix) + "_trace.csv")
"""


def _install_fake_socwatch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mode: str) -> Path:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    argv_log = tmp_path / "argv.txt"
    script = bin_dir / "socwatch"
    script.write_text(
        FAKE_SOCWATCH.format(
            python=sys.executable, data=str(DATA), argv_log=str(argv_log), mode=mode
        )
    )
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{bin_dir}")
    return argv_log


def test_command_line_collects_power_for_the_phase(tmp_path: Path) -> None:
    run = SocWatchRun(tmp_path / "out", duration_s=12.5, interval_ms=50, start_delay_s=2)
    assert run.command() == [
        "socwatch", "-f", "power", "-t", "12.5", "-s", "2", "-n", "50",
        "-r", "int", "-o", str(tmp_path / "out" / "socwatch"),
    ]  # fmt: skip


def test_missing_binary_is_a_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    run = SocWatchRun(tmp_path / "out", duration_s=1)
    with pytest.raises(SocWatchUnavailable, match="'socwatch' was not found on PATH"):
        run.start()


def test_run_writes_files_that_parse(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    argv_log = _install_fake_socwatch(tmp_path, monkeypatch, mode="finish")
    run = SocWatchRun(tmp_path / "out", duration_s=1)
    start = run.start()
    run.wait(timeout_s=30)
    assert argv_log.read_text().split("\n") == run.command()[1:]
    assert parse_trace_csv(run.trace_path).domains == ("package-0", "dram-0")
    assert parse_summary_csv(run.summary_path).average_w["package-0"] == pytest.approx(38.5)
    assert run.launched_at is not None and start == run.launched_at


def test_failed_run_reports_socwatch_output(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _install_fake_socwatch(tmp_path, monkeypatch, mode="fail")
    run = SocWatchRun(tmp_path / "out", duration_s=1)
    run.start()
    with pytest.raises(SocWatchError, match=r"status 2.*driver is not loaded"):
        run.wait(timeout_s=30)


def test_power_source_stops_collection_and_maps_samples(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ready = _install_fake_socwatch(tmp_path, monkeypatch, mode="wait")
    source = SocWatchPowerSource(SocWatchRun(tmp_path / "out", duration_s=600))
    assert isinstance(source, PowerSource)
    source.configure()
    source.arm()
    source.start()
    assert len(source.read()) == 0  # SoC Watch writes nothing until the collection ends
    for _ in range(3000):  # bounded wait until the stand-in can take Ctrl-C
        if ready.exists():
            break
        time.sleep(0.01)
    batch = source.stop()  # SIGINT, as Ctrl-C, makes the stand-in write its files
    assert source.run.launched_at is not None
    np.testing.assert_allclose(batch.t - source.run.launched_at, [0.0, 0.25, 0.5, 0.75])
    np.testing.assert_allclose(batch.values, [15.0, 55.0, 55.3, 45.3])
    assert source.info.domains == ("package-0", "dram-0")
    assert source.info.time_resolution_s == pytest.approx(0.25)
