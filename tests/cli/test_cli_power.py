"""`hilbench power analyze` on CSV files written here: watts, amps + volts, and broken ones."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from hilbench.cli import EXIT_USAGE, cli

KEYS = {
    "idle_w",
    "active_w",
    "dynamic_w",
    "energy_per_inference_j",
    "idle_w_uncertainty",
    "active_w_uncertainty",
    "dynamic_w_uncertainty",
    "energy_per_inference_j_uncertainty",
    "idle_coverage",
    "active_coverage",
}


def write_trace(path: Path, column: str, scale: float = 1.0, late_s: float = 0.0) -> Path:
    """3 Hz readings: 60 s idle at 79.40 mW then 60 s active at 100.72 mW, a little noise;
    the first reading ``late_s`` after the idle window opens (a log from other software)."""
    rng = np.random.default_rng(1)
    t = np.arange(0.0, 120.0, 1 / 3) + late_s
    watts = np.where(t < 60 - 1e-9, 0.07940, 0.10072) + rng.normal(0, 2e-6, t.size)
    lines = [f"time_s,{column}"] + [
        f"{a:.6f},{b * scale:.9f}" for a, b in zip(t, watts, strict=True)
    ]
    path.write_text("\n".join(lines) + "\n")
    return path


def write_phases(path: Path) -> Path:
    path.write_text("phase,start_s,end_s,inferences\nidle,0,60,0\nactive,60,119.9,1395\n")
    return path


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, ["power", "analyze", *args])
    return result.exit_code, result.stdout, result.stderr


def test_watts_trace_gives_pure_json_figures(tmp_path: Path) -> None:
    s = write_trace(tmp_path / "S.csv", "watts")
    p = write_phases(tmp_path / "P.csv")
    code, out, _ = run(
        "--samples",
        str(s),
        "--phases",
        str(p),
        "--json",
        "--accuracy-relative",
        "0.0005",
        "--timing-uncertainty",
        "0.01",
    )
    assert code == 0
    figures = json.loads(out)  # stdout is JSON and nothing else
    assert set(figures) == KEYS
    assert figures["idle_w"] == pytest.approx(0.07940, rel=1e-4)
    assert figures["dynamic_w"] == pytest.approx(0.02132, rel=2e-3)
    assert figures["energy_per_inference_j"] == pytest.approx(0.02132 * 59.9 / 1395, rel=2e-3)
    assert 0 < figures["dynamic_w_uncertainty"] < 0.001 * figures["dynamic_w"]


def test_amps_with_volts_give_the_same_figures_as_watts(tmp_path: Path) -> None:
    p = write_phases(tmp_path / "P.csv")
    watts = write_trace(tmp_path / "W.csv", "watts")
    amps = write_trace(tmp_path / "A.csv", "amps", scale=1 / 5.0)
    _, out_w, _ = run("--samples", str(watts), "--phases", str(p), "--json")
    code, out_a, _ = run("--samples", str(amps), "--phases", str(p), "--volts", "5", "--json")
    assert code == 0
    from_watts = json.loads(out_w)
    from_amps = json.loads(out_a)
    for key in ("idle_w", "active_w", "dynamic_w", "energy_per_inference_j"):
        assert from_amps[key] == pytest.approx(from_watts[key], rel=1e-6)


def test_readable_table_without_json(tmp_path: Path) -> None:
    s = write_trace(tmp_path / "S.csv", "watts")
    p = write_phases(tmp_path / "P.csv")
    code, out, _ = run("--samples", str(s), "--phases", str(p), "--boundary", "weight")
    assert code == 0
    assert "dynamic power" in out and "mW" in out and "mJ" in out
    assert "boundary readings: weight" in out


@pytest.mark.parametrize(
    ("samples", "phases", "extra", "message"),
    [
        ("time_s,watts\n0,1\n1,x\n", None, [], "S.csv line 3: watts 'x' is not a number"),
        ("time_s,watts\n0,1\n2,1\n1,1\n", None, [], "S.csv line 4: time_s 1 is not after 2"),
        ("time_s,amps\n0,1\n1,1\n", None, [], "give the supply voltage"),
        (None, "phase,start_s,end_s,inferences\nrun,0,60,0\n", [], "P.csv line 2: phase 'run'"),
        (None, "phase,start_s,end_s,inferences\nidle,0,500,0\nactive,60,119,9\n", [],
         "idle window 0..500 s: the readings (0..119.667 s) cover 24.0 % of it"),
        (None, "phase,start_s,end_s,inferences\nidle,0,60,0\n", [], "no active window"),
        (None, None, ["--accuracy-relative", "-1"], "--accuracy-relative must be a number >= 0"),
    ],
)
def test_bad_input_exits_2_with_a_message_naming_the_problem(
    tmp_path: Path, samples: str | None, phases: str | None, extra: list[str], message: str
) -> None:
    s = tmp_path / "S.csv"
    p = tmp_path / "P.csv"
    if samples is None:
        write_trace(s, "watts")
    else:
        s.write_text(samples)
    if phases is None:
        write_phases(p)
    else:
        p.write_text(phases)
    code, out, err = run("--samples", str(s), "--phases", str(p), *extra)
    assert code == EXIT_USAGE
    assert message in err
    assert out == ""


def test_missing_file_is_a_usage_error(tmp_path: Path) -> None:
    p = write_phases(tmp_path / "P.csv")
    code, _, err = run("--samples", str(tmp_path / "nope.csv"), "--phases", str(p))
    assert code == EXIT_USAGE
    assert "nope.csv" in err


def test_installed_command_prints_pure_json_and_notes_on_stderr(tmp_path: Path) -> None:
    s = write_trace(tmp_path / "S.csv", "watts")
    p = write_phases(tmp_path / "P.csv")
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "hilbench",
            "power",
            "analyze",
            "--samples",
            str(s),
            "--phases",
            str(p),
            "--json",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert set(json.loads(done.stdout)) == KEYS


def test_a_log_that_starts_late_is_analysed_with_its_coverage(tmp_path: Path) -> None:
    s = write_trace(tmp_path / "S.csv", "watts", late_s=0.3)
    p = write_phases(tmp_path / "P.csv")
    code, out, err = run("--samples", str(s), "--phases", str(p), "--json")
    assert code == 0, err
    figures = json.loads(out)  # stdout is JSON and nothing else
    assert figures["idle_coverage"] == pytest.approx(59.7 / 60, abs=1e-3)
    assert figures["active_coverage"] == pytest.approx(1.0)
    assert figures["idle_w"] == pytest.approx(0.07940, rel=1e-4)
    assert "coverage of each window by the readings: idle 99.5 %" in err  # notes: stderr


def test_too_little_coverage_is_refused_saying_by_how_much(tmp_path: Path) -> None:
    s = write_trace(tmp_path / "S.csv", "watts", late_s=0.3)
    p = write_phases(tmp_path / "P.csv")
    code, _, err = run("--samples", str(s), "--phases", str(p), "--min-coverage", "99.9")
    assert code == EXIT_USAGE
    assert "idle window 0..60 s" in err and "cover 99.5 % of it" in err
    assert "0.4 points below the minimum 99.9 %" in err
