"""`hilbench run examples/asc-nir.toml` end to end, shortened (issue 36's example): ONE NIR graph
on the CPU (the reference executor) and on the simulated Xylo (imported through the driver's
NIR path into XyloSim, agent in .venv-xylo), in one campaign. Both single-stream runs are
labelled `closed` with the same graph hash, agree with the reference execution on every sample
(the Xylo under the neuron conventions it declares), and store the algorithm-track metrics; the
power runs give measured energy beside the modelled one."""

from __future__ import annotations

import pytest

from hilbench.store import Store
from tests.drivers.xylo.conftest import REPO, shortened_example
from tests.subprocesses import run_campaign, unit_runs

pytest.importorskip("nir")
pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

EXAMPLE = REPO / "examples" / "asc-nir.toml"
GRAPH_SHA = "d1120d3ed08e21d4e95ccea71bab93526b8c71dac523eb6edf2efda44fc7601d"


@pytest.fixture(scope="module")
def example_run(xylo_python, tmp_path_factory, asc_cache):
    short = shortened_example(EXAMPLE.name, xylo_python, tables=2)
    tmp = tmp_path_factory.mktemp("nir-example")
    campaign = tmp / "asc-nir.toml"
    campaign.write_text(short)
    db = tmp / "r.sqlite"
    proc = run_campaign(campaign, db, timeout=600,
                        extra_env={"XDG_CACHE_HOME": str(asc_cache), "COLUMNS": "180"})
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    with Store(db) as store:
        runs = {(r["params"]["agent"], r["procedure"]): {
            "run": r, "metrics": {m["name"]: m for m in store.metrics(r["uid"])}}
            for r in unit_runs(store)}
    return proc, runs, db


def test_both_devices_run_the_same_graph_labelled_closed(example_run):
    _, runs, _ = example_run
    assert sorted(runs) == [("cpu0", "asc.power"), ("cpu0", "asc.single_stream"),
                            ("xylo0", "asc.power"), ("xylo0", "asc.single_stream")]
    for found in runs.values():
        assert found["run"]["status"] == "success"
        assert found["run"]["params"]["category"] == "closed"
        assert found["run"]["params"]["graph_sha256"] == GRAPH_SHA


def test_each_device_agrees_with_the_reference_execution(example_run):
    _, runs, _ = example_run
    cpu = runs["cpu0", "asc.single_stream"]["metrics"]["nir_reference_agreement"]
    xylo = runs["xylo0", "asc.single_stream"]["metrics"]["nir_reference_agreement"]
    assert cpu["value"] == 1.0 and cpu["meta"]["samples"] == 10
    assert xylo["value"] == 1.0 and xylo["meta"]["samples"] == 10
    # the Xylo's declared conventions: up to 31 spikes a step, reset by subtraction, delay 1
    assert xylo["meta"]["device_semantics"] == {
        "reset": "subtract", "fire_at_threshold": True, "max_spikes_hidden": 31,
        "max_spikes_output": 1, "spike_delay_steps": 1}
    assert "XyloSim" in xylo["meta"]["executor"]
    assert "reference executor" in cpu["meta"]["executor"]


def test_the_store_holds_the_algorithm_metrics_of_each_run(example_run):
    _, runs, _ = example_run
    for agent in ("cpu0", "xylo0"):
        metrics = runs[agent, "asc.single_stream"]["metrics"]
        for name in ("footprint_bytes", "connection_sparsity", "activation_sparsity",
                     "synaptic_ops_dense", "synaptic_ops_effective_macs",
                     "synaptic_ops_effective_acs", "modelled_energy_per_inference_j"):
            assert metrics[name]["value"] is not None, (agent, name)
            assert metrics[name]["meta"]["graph_sha256"] == GRAPH_SHA
        assert 0 < metrics["activation_sparsity"]["value"] < 1
        assert runs[agent, "asc.power"]["metrics"]["energy_per_inference_j.inference"]["value"] > 0


def test_summary_shows_measured_beside_modelled_energy_per_device(example_run):
    """The run's own summary (and `hilbench summary`, built the same way) has the closed
    category's table: both devices, the graph's hash, modelled and measured energy and their
    ratio, which equals measured ÷ modelled as stored."""
    from hilbench.report.campaign_data import load_campaign_data
    from hilbench.workloads.asc.report.closed import tables

    proc, runs, db = example_run
    assert "ASC closed category: NIR graph d1120d3ed08e… on every device" in proc.stdout
    assert f"graph sha256 {GRAPH_SHA}" in proc.stdout
    with Store(db) as store:
        campaign_uid = store.runs()[0]["campaign_uid"]
    (table,) = tables(load_campaign_data(db, campaign_uid))
    assert [c.name for c in table.columns] == ["metric", "cpu0", "xylo0"]
    rows = {row.ident: row.cells for row in table.rows}
    for k, agent in ((1, "cpu0"), (2, "xylo0")):
        measured = runs[agent, "asc.power"]["metrics"]["energy_per_inference_j.inference"]
        modelled = runs[agent, "asc.single_stream"]["metrics"]["modelled_energy_per_inference_j"]
        assert rows["measured"][k].value == pytest.approx(measured["value"])
        assert rows["modelled"][k].value == pytest.approx(modelled["value"])
        assert rows["modelled"][k].label == "modelled"
        assert rows["ratio"][k].value == pytest.approx(measured["value"] / modelled["value"])
        assert rows["agreement"][k].value == 1.0
    assert rows["measured"][2].simulated  # the Xylo's power is the simulated meter's


def test_leaderboard_rows_say_closed_and_group_by_graph(example_run):
    from tests.subprocesses import hilbench

    _, _, db = example_run
    proc = hilbench("leaderboard", "--db", db, "--system", REPO / "examples" / "system.toml",
                    "--format", "json", "asc-nir", timeout=120)
    assert proc.returncode == 0, proc.stderr
    import json

    rows = json.loads(proc.stdout)["rows"]
    assert [(r["entry"], r["asc_category"], r["asc_graph_sha256"]) for r in rows] == [
        ("cpu0", "closed", GRAPH_SHA), ("xylo0", "closed", GRAPH_SHA)]
    assert all(r["asc_measured_to_modelled_energy"] > 1 for r in rows)


def test_the_report_carries_the_closed_category_table(example_run, tmp_path):
    from tests.subprocesses import hilbench

    _, _, db = example_run
    proc = hilbench("report", "--db", db, "--out", tmp_path / "rep", "asc-nir", timeout=300)
    assert proc.returncode == 0, proc.stderr
    for name in ("report.md", "report.html"):
        text = (tmp_path / "rep" / name).read_text()
        assert "ASC closed category: NIR graph d1120d3ed08e" in text, name
        assert "measured ÷ modelled" in text, name
        assert GRAPH_SHA in text, name
