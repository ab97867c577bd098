"""Intel SoC Watch's files: its summary and trace parsed, errors naming file and line, and the
samples placed on the orchestrator timeline."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from hilbench.power.socwatch_files import (
    SocWatchError,
    component_domain,
    domain_timelines,
    parse_summary_csv,
    parse_trace_csv,
    to_timeline,
)

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
