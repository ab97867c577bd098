"""`hilbench run examples/asc-xylo.toml` end to end, shortened: the xylo agent spawned from the
Xylo environment (campaign key `python`), single stream over fixture samples with AFESim and
XyloSim, power on the simulated path (simulated meter reading the xylo-audio-2 model), the
Table-6 rows labelled simulated, pre-processing not measured with its reason."""

from __future__ import annotations

import re

import pytest

from hilbench.store import Store
from tests.drivers.xylo.conftest import REPO, shortened_example
from tests.subprocesses import run_campaign, unit_runs

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]  # the example, given 600 s

EXAMPLE = REPO / "examples" / "asc-xylo.toml"


@pytest.fixture(scope="module")
def example_run(xylo_python, tmp_path_factory, asc_cache):
    short = shortened_example(EXAMPLE.name, xylo_python, tables=1)
    short = re.sub(r"^stream_s = \[10\]", "stream_s = [3]", short, flags=re.M)
    short = short.replace('model = "../drivers/xylo/data/', f'model = "{REPO}/drivers/xylo/data/')
    assert "stream_s = [3]" in short
    tmp = tmp_path_factory.mktemp("xylo-example")
    campaign = tmp / "asc-xylo.toml"
    campaign.write_text(short)
    db = tmp / "r.sqlite"
    proc = run_campaign(
        campaign, db, timeout=600, extra_env={"XDG_CACHE_HOME": str(asc_cache), "COLUMNS": "180"}
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    with Store(db) as store:
        details = {r["unit_key"]: {"run": r,
                                   "metrics": {m["name"]: m for m in store.metrics(r["uid"])},
                                   "samples": store.events(r["uid"], "sample")}
                   for r in unit_runs(store)}
    return proc, details


def _one(details, procedure, stream=None):
    found = [d for d in details.values() if d["run"]["procedure"] == procedure and
             (stream is None or d["run"]["params"]["stream_samples"] == stream)]
    assert len(found) == 1
    return found[0]


def test_runs_succeed_and_every_row_says_simulated(example_run):
    proc, details = example_run
    assert all(d["run"]["status"] == "success" for d in details.values())
    assert sorted(d["run"]["procedure"] for d in details.values()) == [
        "asc.power", "asc.power", "asc.single_stream"]
    table = proc.stdout
    assert "NeuroBench Table 6 layout" in table
    # Every figure is simulated (XyloSim, simulated meter): each figure column's heading says
    # so, and every row of Table 6 is under them. A table wider than the page is printed in
    # blocks (report/render.py), each under its own heading line.
    # Headings may also wrap between words over several lines above their rule.
    lines = table.splitlines()
    title = next(i for i, line in enumerate(lines) if " in detail (" in line)  # below Table 6
    words = []
    for j in range(title + 1, len(lines)):
        if not lines[j].startswith("─"):
            continue
        top = j
        while top > title + 1 and lines[top - 1].strip() and not lines[top - 1].startswith("─"):
            top -= 1
        if any(line.startswith("metric ") for line in lines[top:j]):  # a heading, not a section
            words += " ".join(lines[top:j]).split()
    assert sorted(w for w in words if w != "metric") == [
        "(simulated)", "(simulated)", "inference", "pre-processing"], words
    rule = next(i for i in range(title, len(lines)) if lines[i].startswith("─"))
    for row in ("accuracy", "execution time", "idle power", "active power", "dynamic energy"):
        assert any(line.startswith(row) for line in lines[rule:]), row
    assert "SIMULATED single stream: device xylo0: Xylo Audio 2 simulated" in table
    # the description is the device's and the model's, not the CNN baseline's
    flat = " ".join(table.split())
    assert "int8 CNN" not in flat and "timed on the device's clock" not in flat
    assert "pre-processing not measured (analog front end simulated on the host" in flat
    assert "inference in XyloSim" in flat and "spiking network for Xylo Audio 2" in flat


def test_single_stream_on_xylosim_reports_preprocessing_as_not_measured(example_run):
    _, details = example_run
    ss = _one(details, "asc.single_stream")
    samples = ss["samples"]
    assert len(samples) == 10
    records = [e["data"] for e in samples]
    for data in records:
        assert data["preprocess_s"] is None
        assert "AFESim" in data["preprocess_reason"]
        assert data["correct"] == (data["predicted"] == data["label"])
    metrics = ss["metrics"]
    assert metrics["accuracy"]["value"] == pytest.approx(
        sum(d["correct"] for d in records) / len(records))
    assert metrics["inference_time_s"]["value"] == pytest.approx(
        sum(d["inference_s"] for d in records) / len(records))
    assert metrics["preprocess_time_s"]["value"] is None


def test_power_on_the_simulated_path_recovers_the_model(example_run):
    _, details = example_run
    one = _one(details, "asc.power", 1)["metrics"]
    idle, active = one["idle_power_w"], one["active_power_w.inference"]
    # the xylo-audio-2 model: 0.351 mW idle, 0.692 mW while inferring
    assert idle["value"] == pytest.approx(0.000351, abs=max(3 * idle["uncertainty"], 2e-5))
    assert active["value"] == pytest.approx(0.000692, abs=max(3 * active["uncertainty"], 4e-5))
    assert one["energy_per_inference_j.preprocessing"]["value"] is None
    assert one["energy_per_inference_j.inference"]["value"] > 0
    stream = _one(details, "asc.power", 3)["metrics"]
    assert stream["loop_time_s.inference"]["meta"]["amortised"] is True
