"""`hilbench leaderboard`: NeuroBench leaderboard rows from a real store and system.toml, in SI
units with the spec version, the system's fields on every row."""

from __future__ import annotations

import csv
import io
import json
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from hilbench.cli import EXIT_USAGE, cli
from hilbench.documents import Metric, RunStart, RunStop, new_uid
from hilbench.report.system import SPEC_VERSION
from hilbench.store import StoreWriter

SYSTEM = Path(__file__).parents[2] / "examples" / "system.toml"


def _run(writer, campaign, key, procedure, params, metrics, simulated=False):
    uid = new_uid()
    writer(RunStart(uid, campaign, key, procedure, params, {"cpu0": {}}, 1.0, time.time(), "0",
                    simulated=simulated, simulation="meter: simulated" if simulated else ""))
    for name, value, unit, u, meta in metrics:
        writer(Metric(uid, name, value, unit, u, meta=meta))
    writer(RunStop(uid, 2.0, "success", ""))


@pytest.fixture
def store(tmp_path):
    path = tmp_path / "lb.sqlite"
    with StoreWriter(path) as writer:
        writer.begin_campaign("asc1", "asc-cpu", {})
        _run(writer, "asc1", "asc/single_stream/cpu0/abc/rep=0", "asc.single_stream",
             {"agent": "cpu0", "repetition": 0},
             [("accuracy", 0.7964, "", 0.01, {"interval95": [0.78, 0.81]}),
              ("preprocess_time_s", 0.043, "s", 0.0001, {}),
              ("inference_time_s", 0.045, "s", 0.0001, {})])
        _run(writer, "asc1", "asc/power/cpu0/abc/stream=1/rep=0", "asc.power",
             {"agent": "cpu0", "stream_samples": 1, "repetition": 0},
             [("idle_power_w", 0.0794, "W", 0.0002, {}),
              *[(f"{name}.{stage}", value, unit, 1e-5, {})
                for stage, (active, energy) in {"preprocessing": (0.10072, 9.3e-4),
                                                "inference": (0.10015, 9.3e-4)}.items()
                for name, value, unit in (("active_power_w", active, "W"),
                                          ("dynamic_power_w", active - 0.0794, "W"),
                                          ("energy_per_inference_j", energy, "J"))]],
             simulated=True)
        writer.end_campaign("asc1", "success")
        writer.begin_campaign("q1", "qubo-tts", {})
        for seed in range(5):
            _run(writer, "q1", f"qubo/tts/n=100/seed={seed}/sa/rep=0", "qubo.time_to_solution",
                 {"scenario": "time_to_solution", "nodes": 100, "density": 0.05, "seed": seed,
                  "solver": "sa", "gaps": [0.1, 0.05, 0.01], "repetition": 0},
                 [("tts_s@0.1", 0.01 * (seed + 1), "s", None, {}),
                  ("tts_energy_j@0.1", 0.38 * (seed + 1), "J", 0.01, {}),
                  ("tts_s@0.05", 0.1, "s", None, {}),
                  ("tts_energy_j@0.05", 3.8, "J", 0.02, {}),
                  ("tts_s@0.01", None if seed == 4 else 1.0, "s", None, {}),
                  ("tts_energy_j@0.01", None if seed == 4 else 38.0, "J", 0.1, {})])
        for density, nodes in ((0.01, 4000), (1.0, 2000)):
            _run(writer, "q1", f"qubo/largest/d={density}/sa", "qubo.largest_workload",
                 {"scenario": "largest_workload", "density": density, "solver": "sa"},
                 [("largest_nodes", nodes, "", None,
                   {"stop_reason": "max_nodes", "detail": "ceiling"})])
        writer.end_campaign("q1", "success")
    return path


def _leaderboard(*args):
    return CliRunner().invoke(cli, ["leaderboard", *map(str, args)])


def test_rows_carry_the_system_and_si_figures(store):
    result = _leaderboard("asc-cpu", "qubo-tts", "--db", store, "--system", SYSTEM,
                          "--format", "json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["spec_version"] == SPEC_VERSION
    asc, qubo = data["rows"]
    for row in (asc, qubo):
        assert row["system"] == "Example CPU bench" and row["organisation"] == "Example Lab"
        assert row["availability"] == "Available" and row["date"] == "2026-01-15"
        assert row["power_measurement_category"] == "external analyzer tap"
        assert row["configuration"] == "performance" and "hilbench" in row["software"]
    assert asc["benchmark"] == "asc" and asc["asc_accuracy"] == pytest.approx(0.7964)
    assert asc["asc_execution_time_inference_s"] == pytest.approx(0.045)
    assert asc["asc_energy_per_inference_inference_j"] == pytest.approx(9.3e-4)
    assert asc["simulated"] is True  # the power run was simulated
    assert data["units"]["asc_energy_per_inference_inference_j"] == "J"
    assert qubo["benchmark"] == "qubo" and qubo["entry"] == "sa"
    assert qubo["qubo_time_to_90pct_s"] == pytest.approx(0.03)  # mean over the 5 seeds
    assert qubo["qubo_energy_to_90pct_j"] == pytest.approx(1.14)
    assert qubo["qubo_time_to_99pct_s"] == pytest.approx(1.0)  # over the 4 that reached it
    assert qubo["qubo_seeds_reached"] == "5/5 5/5 4/5"
    assert qubo["qubo_largest_nodes_1pct"] == 4000
    assert qubo["qubo_largest_nodes_fully_connected"] == 2000
    assert data["units"]["qubo_time_to_99pct_s"] == "s"


def test_csv_and_markdown(store):
    text = _leaderboard("asc-cpu", "qubo-tts", "--db", store, "--system", SYSTEM).output
    rows = list(csv.DictReader(io.StringIO(text)))
    assert [r["benchmark"] for r in rows] == ["asc", "qubo"]
    assert rows[0]["spec_version"] == SPEC_VERSION and rows[1]["asc_accuracy"] == ""
    md = _leaderboard("qubo-tts", "--db", store, "--system", SYSTEM, "--format", "md").output
    assert "## qubo: sa on Example CPU bench" in md and "| qubo_time_to_90pct_s | 0.03 | s |" in md


def test_a_bad_system_file_or_campaign_is_refused(store, tmp_path):
    bad = tmp_path / "system.toml"
    bad.write_text(SYSTEM.read_text().replace('availability = "Available"',
                                              'availability = "soon"'))
    result = _leaderboard("asc-cpu", "--db", store, "--system", bad)
    assert result.exit_code == EXIT_USAGE and f"{bad} [system] availability" in result.output
    result = _leaderboard("nope", "--db", store, "--system", SYSTEM)
    assert result.exit_code == EXIT_USAGE and "no campaign matching 'nope'" in result.output
