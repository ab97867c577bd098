"""Running Intel SoC Watch beside a phase (a stand-in on PATH) and reading its power as a
PowerSource. Parsing its files is tested in test_socwatch_files.py."""

from __future__ import annotations

import os
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from hilbench.power.socwatch import SocWatchPowerSource, SocWatchRun, SocWatchUnavailable
from hilbench.power.socwatch_files import SocWatchError, parse_summary_csv, parse_trace_csv
from hilbench.power.source import PowerSource
from tests.orphans import alive, alive_after

DATA = Path(__file__).parent / "data"


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


PARENT = """
import sys, time
from pathlib import Path
from hilbench.power.socwatch import SocWatchRun
run = SocWatchRun(Path(sys.argv[1]), duration_s=600)
run.start()
print(run._process.pid, flush=True)
time.sleep(600)
"""


def test_socwatch_dies_with_a_sigkilled_parent(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ready = _install_fake_socwatch(tmp_path, monkeypatch, mode="wait")
    parent = subprocess.Popen([sys.executable, "-c", PARENT, str(tmp_path / "out")],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert parent.stdout is not None
        child = int(parent.stdout.readline())
        for _ in range(3000):  # bounded wait until the stand-in runs its collection
            if ready.exists():
                break
            time.sleep(0.01)
        assert alive([child]) == [child]
        parent.kill()
        parent.wait(10)
        assert alive_after([child], 2.0) == [], "socwatch outlived its parent by 2 s"
    finally:
        if parent.poll() is None:
            parent.kill()
            parent.wait()
        for pid in alive([child]) if "child" in locals() else []:
            os.kill(pid, signal.SIGKILL)
