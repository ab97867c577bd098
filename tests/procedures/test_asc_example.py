"""`hilbench run examples/asc-cpu.toml` end to end (windows shortened to two seconds): fixture,
training, single stream through a real agent process, power on the simulated bench, the
Table-6 summary, and every figure traceable to stored per-sample records."""

from __future__ import annotations

import os
import re
import statistics
from pathlib import Path

import pytest

from hilbench.store import Store
from tests.campaign_toml import patient
from tests.subprocesses import run_campaign, unit_runs

pytestmark = pytest.mark.slow

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "asc-cpu.toml"


@pytest.fixture(scope="module")
def example_run(asc_cache: Path, tmp_path_factory: pytest.TempPathFactory):
    text = patient(EXAMPLE.read_text())
    # 2 s: the stage attribution needs 2 000 readings inside a window (20 batches of 100),
    # which the example's 2 kHz meter gives in 1 s only just.
    short = re.sub(r"^(idle_s|active_s) = [0-9.]+", r"\1 = 2.0", text, flags=re.M)
    short = re.sub(r"^repetitions = 2", "repetitions = 1", short, flags=re.M)
    assert short.count("= 2.0") >= 2, "the example no longer sets idle_s / active_s"
    tmp = tmp_path_factory.mktemp("example")
    campaign = tmp / "asc-cpu.toml"
    campaign.write_text(short)
    db = tmp / "r.sqlite"
    # The example needs no PyTorch: a `torch` that cannot be imported stands in front of any.
    blocker = tmp / "no-torch"
    (blocker / "torch").mkdir(parents=True)
    (blocker / "torch" / "__init__.py").write_text("raise ImportError('torch is blocked')\n")
    path = os.pathsep.join(p for p in (str(blocker), os.environ.get("PYTHONPATH", "")) if p)
    proc = run_campaign(
        campaign,
        db,
        extra_env={"XDG_CACHE_HOME": str(asc_cache), "COLUMNS": "160", "PYTHONPATH": path},
    )
    assert proc.returncode == 0, proc.stderr
    with Store(db) as store:
        runs = {r["unit_key"]: r for r in unit_runs(store)}
        details = {
            key: {
                "run": r,
                "metrics": {m["name"]: m for m in store.metrics(r["uid"])},
                "samples": store.events(r["uid"], "sample"),
                "events": store.events(r["uid"]),
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
        "asc.power", "asc.single_stream"
    ]
    assert all(d["run"]["status"] == "success" for d in details.values())
    out = proc.stdout
    words = " ".join(out.split())  # notes under the table wrap at 80 columns
    assert "NeuroBench Table 6 layout" in out
    for row in ("accuracy", "execution time", "idle power", "active power", "dynamic power",
                "dynamic energy / inference"):
        assert row in out
    assert "power: single stream over the test samples" in out and "AMORTISED" not in words
    assert "attributed from the readings by when the device ran it" in words
    assert re.search(r"Keysight 34465A at \S+ \(simulated\)", words)
    assert "boundary readings: exclude" in words
    # Every power figure on the simulated bench says so: each power section's label does
    # (every figure under it is simulated), the single-stream figures (real CPU) do not.
    sections = [line for line in out.splitlines() if line.startswith("power: ")]
    assert len(sections) == 1 and all(line.endswith("(simulated)") for line in sections)
    timing = next(line for line in out.splitlines() if line.startswith("execution time (mean"))
    assert "(simulated)" not in timing
    assert "SIMULATED power" in words


def test_power_runs_are_stored_as_simulated_and_say_what_is(example_run):
    _, details = example_run
    for d in details.values():
        if d["run"]["procedure"] == "asc.power":
            assert d["run"]["simulated"] is True
            assert "simulated bench meter" in d["run"]["simulation"]
        else:  # the CPU and its timers are real; no instrument figure is in this run
            assert d["run"]["simulated"] is False and d["run"]["simulation"] == ""


SINGLE_METRICS = {"accuracy", "preprocess_time_s", "inference_time_s",
                  "harness_overhead_median_s", "harness_overhead_p99_s", "samples"}
POWER_METRICS = {"idle_power_w", *(f"{name}.{stage}" for stage in ("preprocessing", "inference")
                                   for name in ("loop_time_s", "active_power_w",
                                                "dynamic_power_w", "energy_per_inference_j"))}


def test_every_asc_metric_is_stored(example_run):
    _, details = example_run
    assert set(_one(details, "asc.single_stream")["metrics"]) == SINGLE_METRICS
    assert set(_one(details, "asc.power", 1)["metrics"]) == POWER_METRICS


def test_accuracy_on_the_fixture_is_well_above_chance(example_run):
    _, details = example_run
    single = _one(details, "asc.single_stream")
    assert single["metrics"]["accuracy"]["value"] >= 0.75  # chance is 0.25
    assert single["run"]["params"]["model"].endswith("asc-int8-fixture.npz")
    assert single["run"]["params"]["trained_now"] is None


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
    low, high = metrics["accuracy"]["meta"]["interval95"]
    assert low < metrics["accuracy"]["value"] <= high
    assert metrics["samples"]["value"] == 80
    for stage, name in (("preprocess_s", "preprocess_time_s"), ("inference_s", "inference_time_s")):
        values = [s[stage] for s in samples]
        assert metrics[name]["value"] == pytest.approx(statistics.fmean(values))
        assert metrics[name]["uncertainty"] == pytest.approx(
            statistics.stdev(values) / len(values) ** 0.5
        )
    overhead = sorted(s["round_trip_s"] - s["preprocess_s"] - s["inference_s"] for s in samples)
    assert metrics["harness_overhead_median_s"]["value"] == pytest.approx(
        statistics.median(overhead))
    assert overhead[0] <= metrics["harness_overhead_p99_s"]["value"] <= overhead[-1]
    # the orchestrator's round trip contains the device's own time
    assert all(s["round_trip_s"] > s["preprocess_s"] + s["inference_s"] for s in samples)


def test_the_power_run_reports_every_figure_with_its_method(example_run):
    _, details = example_run
    power = _one(details, "asc.power", 1)
    single = _one(details, "asc.single_stream")
    m = power["metrics"]
    for stage, time_name in (("preprocessing", "preprocess_time_s"),
                             ("inference", "inference_time_s")):
        dynamic = m[f"dynamic_power_w.{stage}"]
        assert dynamic["value"] is not None, dynamic["meta"].get("reason")
        assert dynamic["value"] > 0 and dynamic["uncertainty"] > 0
        idle, active = m["idle_power_w"]["value"], m[f"active_power_w.{stage}"]["value"]
        assert dynamic["value"] == pytest.approx(active - idle)
        energy = m[f"energy_per_inference_j.{stage}"]
        # Table 6: energy = dynamic power × the single-stream execution time over the test set
        # (not the loop time inside the power window, which stays beside it).
        single_time = single["metrics"][time_name]["value"]
        assert energy["value"] == pytest.approx(dynamic["value"] * single_time)
        assert energy["meta"]["single_stream_run"] == single["run"]["uid"]
        loop = m[f"loop_time_s.{stage}"]
        assert energy["meta"]["loop_time"]["loop_s"] == loop["value"]
        assert loop["value"] > 0 and loop["meta"]["samples"] >= 80
        assert energy["meta"]["method"].startswith("device runs single stream")
        assert energy["meta"]["budget"]["components"]
    assert m["idle_power_w"]["meta"]["instrument"].startswith("Keysight 34465A")
    assert m["idle_power_w"]["meta"]["instrument"].endswith("(simulated)")
    assert power["run"]["params"]["power_method"] == "single_stream"
    loaded = [e["data"] for e in power["events"] if e["name"] == "loaded"]
    assert loaded[-1]["samples"] == 80 and loaded[-1]["sample_lists"] == 1
    # One sample at a time: each window ran the test samples in order, one after the other.
    (window,) = [e["data"] for e in power["events"] if e["name"] == "pipeline_window"]
    index, starts, ends = (window["samples"][k] for k in ("index", "t_start", "t_end"))
    assert index[:80] == list(range(80)) and len(index) >= 80
    assert all(b >= a for a, b in zip(ends, starts[1:], strict=False))
