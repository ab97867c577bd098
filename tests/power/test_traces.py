"""Reading S.csv / P.csv written by other software, and refusing broken ones clearly."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from hilbench.power.traces import TraceFormatError, read_phases_csv, read_samples_csv


def write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def test_watts_trace_is_read_as_is(tmp_path: Path) -> None:
    s = write(tmp_path / "S.csv", "time_s,watts\n0.0,0.0794\n0.5,0.0795\n1.0,0.1007\n")
    trace = read_samples_csv(s)
    assert trace.t.tolist() == [0.0, 0.5, 1.0]
    assert trace.watts.tolist() == [0.0794, 0.0795, 0.1007]
    assert trace.column == "watts"
    assert trace.end == 1.5  # the last reading stands for one more interval


def test_amps_are_turned_into_watts_with_the_supply_voltage(tmp_path: Path) -> None:
    s = write(tmp_path / "S.csv", "time_s,amps\n0,0.01588\n1,0.020144\n")
    trace = read_samples_csv(s, volts=5.0)
    np.testing.assert_allclose(trace.watts, [0.0794, 0.10072], rtol=1e-12)


def test_comments_blank_lines_bom_extra_columns_and_column_order(tmp_path: Path) -> None:
    s = tmp_path / "S.csv"
    s.write_bytes(
        "\ufeff# logged by some script\nWatts, note ,Time_s\n\n0.1,a,0\n# pause\n0.2,b,1\n".encode()
    )
    trace = read_samples_csv(s)
    assert trace.t.tolist() == [0.0, 1.0]
    assert trace.watts.tolist() == [0.1, 0.2]


@pytest.mark.parametrize(
    ("text", "volts", "message"),
    [
        ("", None, "S.csv: file is empty"),
        ("t,watts\n0,1\n1,1\n", None, "S.csv line 1: no 'time_s' column"),
        ("time_s,volts\n0,1\n1,1\n", None, "S.csv line 1: need a 'watts' or 'amps' column"),
        ("time_s,watts\n0,1\n1,abc\n", None, "S.csv line 3: watts 'abc' is not a number"),
        ("time_s,watts\n0,1\n1,nan\n", None, "S.csv line 3: watts 'nan' is not a finite"),
        ("time_s,watts\n0,1\n1\n", None, "S.csv line 3: no value in column 'watts'"),
        ("time_s,watts\n0,1\n2,1\n\n1,1\n", None, "S.csv line 5: time_s 1 is not after 2 .line 3"),
        ("time_s,watts\n0,1\n0,1\n", None, "S.csv line 3: time_s 0 is not after 0"),
        ("time_s,watts\n0,1\n", None, "1 reading.s.; need at least two"),
        ("time_s,amps\n0,1\n1,1\n", None, "give the supply voltage"),
        ("time_s,amps\n0,1\n1,1\n", -5.0, "supply voltage must be a positive number"),
        ("time_s,watts\n0,1\n1,1\n", 5.0, "already in watts"),
    ],
)
def test_broken_sample_files_name_file_and_line(
    tmp_path: Path, text: str, volts: float | None, message: str
) -> None:
    s = write(tmp_path / "S.csv", text)
    with pytest.raises(TraceFormatError, match=message):
        read_samples_csv(s, volts=volts)


def test_phases_with_optional_device_timer_column(tmp_path: Path) -> None:
    p = write(
        tmp_path / "P.csv",
        "phase,start_s,end_s,inferences,mean_execution_s\n"
        "idle,0,60,0,\n"
        "ACTIVE,60,120,1395,0.043\n"
        "active,130,190,1400,\n",
    )
    idle, active, active2 = read_phases_csv(p)
    assert (idle.name, idle.start, idle.end, idle.inferences) == ("idle", 0.0, 60.0, 0)
    assert active.name == "active" and active.mean_execution_s == 0.043
    assert active2.mean_execution_s is None and active2.inferences == 1400


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("phase,start_s,end_s\nidle,0,1\n", "P.csv line 1: missing column.s. inferences"),
        ("phase,start_s,end_s,inferences\nbusy,0,1,0\n", "P.csv line 2: phase 'busy' is not one"),
        ("phase,start_s,end_s,inferences\nidle,5,5,0\n", "P.csv line 2: end_s 5 is not after"),
        ("phase,start_s,end_s,inferences\nidle,x,5,0\n", "P.csv line 2: start_s 'x' is not a"),
        ("phase,start_s,end_s,inferences\nactive,0,5,2.5\n", "line 2: inferences '2.5' is not"),
        ("phase,start_s,end_s,inferences\nactive,0,5,-1\n", "line 2: inferences '-1' is not"),
        ("phase,start_s,end_s,inferences\n# nothing\n", "P.csv: no phase windows"),
    ],
)
def test_broken_phase_files_name_file_and_line(tmp_path: Path, text: str, message: str) -> None:
    p = write(tmp_path / "P.csv", text)
    with pytest.raises(TraceFormatError, match=message):
        read_phases_csv(p)


def test_windows_reaching_past_the_trace_are_read_for_coverage_analysis(tmp_path: Path) -> None:
    s = write(tmp_path / "S.csv", "time_s,watts\n" + "".join(f"{i},1\n" for i in range(10)))
    trace = read_samples_csv(s)  # readings cover 0..10 s
    past = write(
        tmp_path / "P2.csv", "phase,start_s,end_s,inferences\nidle,0,5,0\nactive,5,12,3\n"
    )
    windows = read_phases_csv(past, trace)  # whether 5..12 s is covered enough is decided later
    assert [(w.start, w.end) for w in windows] == [(0, 5), (5, 12)]
