"""`hilbench run examples/asc-cpu.toml` end to end (windows shortened to one second): fixture,
training, single stream through a real agent process, power on the simulated bench, the
Table-6 summary, and every figure traceable to stored per-sample records."""

from __future__ import annotations

import os
import re
import statistics
import subprocess
import sys
from pathlib import Path

import pytest

from hilbench.store import Store

pytest.importorskip("torch")
pytestmark = pytest.mark.slow

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "asc-cpu.toml"


@pytest.fixture(scope="module")
def example_run(asc_cache: Path, tmp_path_factory: pytest.TempPathFactory):
    text = EXAMPLE.read_text()
    short = re.sub(r"^(idle_s|active_s) = [0-9.]+", r"\1 = 1.0", text, flags=re.M)
    short = re.sub(r"^repetitions = 2", "repetitions = 1", short, flags=re.M)
    assert short.count("= 1.0") >= 2, "the example no longer sets idle_s / active_s"
    tmp = tmp_path_factory.mktemp("example")
    campaign = tmp / "asc-cpu.toml"
    campaign.write_text(short)
    db = tmp / "r.sqlite"
    proc = subprocess.run(
        [sys.executable, "-m", "hilbench", "run", str(campaign), "--db", str(db), "-q"],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "XDG_CACHE_HOME": str(asc_cache), "COLUMNS": "160"},
    )
    assert proc.returncode == 0, proc.stderr
    with Store(db) as store:
        runs = {r["unit_key"]: r for r in store.runs()}
        details = {
            key: {
                "run": r,
                "metrics": {m["name"]: m for m in store.metrics(r["uid"])},
                "samples": store.events(r["uid"], "sample"),
            }
            for key, r in runs.items()
        }
    return proc, details


def _one(details: dict, procedure: str, stream: int | None = None) -> dict:
    found = [
        d for d in details.values()
        if d["run"]["procedure"] == procedure
        and (stream is None or d["run"]["params"]["stream_samples"] == stream)
    ]
    assert len(found) == 1
    return found[0]


def test_all_runs_succeed_and_the_table_is_printed(example_run):
    proc, details = example_run
    assert sorted(d["run"]["procedure"] for d in details.values()) == [
        "asc.power", "asc.power", "asc.single_stream"
    ]
    assert all(d["run"]["status"] == "success" for d in details.values())
    out = proc.stdout
    assert "NeuroBench Table 6 layout" in out
    for row in ("accuracy", "execution time", "idle power", "active power", "dynamic power",
                "dynamic energy / inference"):
        assert row in out
    assert "5 s streams, amortised" in out and "AMORTISED" in out
    assert "Keysight 34465A" in out and "boundary readings: exclude" in out


def test_accuracy_on_the_fixture_is_well_above_chance(example_run):
    _, details = example_run
    single = _one(details, "asc.single_stream")
    assert single["metrics"]["accuracy"]["value"] >= 0.75  # chance is 0.25
    assert single["run"]["params"]["trained_now"]["epochs"] == 5


def test_every_sample_is_kept_and_the_figures_follow_from_the_records(example_run):
    _, details = example_run
    single = _one(details, "asc.single_stream")
    samples = [e["data"] for e in single["samples"]]
    assert len(samples) == single["run"]["params"]["test_slices"] == 80
    assert [s["index"] for s in samples] == list(range(80))
    assert all(s["correct"] == (s["predicted"] == s["label"]) for s in samples)
    assert {s["label"] for s in samples} == {0, 1, 2, 3}
    metrics = single["metrics"]
    assert metrics["accuracy"]["value"] == statistics.fmean(s["correct"] for s in samples)
    pre = [s["preprocess_s"] for s in samples]
    assert metrics["preprocess_time_s"]["value"] == pytest.approx(statistics.fmean(pre))
    assert metrics["preprocess_time_s"]["uncertainty"] == pytest.approx(
        statistics.stdev(pre) / len(pre) ** 0.5
    )
    # the orchestrator's round trip contains the device's own time
    assert all(s["round_trip_s"] > s["preprocess_s"] + s["inference_s"] for s in samples)


@pytest.mark.parametrize("stream", [1, 5])
def test_power_runs_report_every_figure_with_its_method(example_run, stream):
    _, details = example_run
    power = _one(details, "asc.power", stream)
    m = power["metrics"]
    for stage in ("preprocessing", "inference"):
        dynamic = m[f"dynamic_power_w.{stage}"]
        assert dynamic["value"] > 0 and dynamic["uncertainty"] > 0
        energy = m[f"energy_per_inference_j.{stage}"]
        loop = m[f"loop_time_s.{stage}"]["value"]
        assert energy["value"] == pytest.approx(dynamic["value"] * loop)
        assert energy["meta"]["amortised"] is (stream > 1)
        assert energy["meta"]["budget"]["components"]
    assert m["idle_power_w"]["meta"]["instrument"].startswith("Keysight 34465A")
    assert power["run"]["params"]["amortised"] is (stream > 1)
