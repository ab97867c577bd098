"""A NIR graph as a campaign's `[[asc]] model` (issue 36, the closed category), on the CPU: the
file is confined to the campaign's folder and checked before anything starts (one line naming
the file and the key), `campaign check` names the graph's content hash, a driver that declares
it cannot run NIR is refused at the gate with its reason, and a run stores the reference check,
NeuroBench's algorithm-track metrics of the samples it ran and the modelled energy, labelled
`closed` with the graph's hash. The CPU + simulated Xylo example runs in
tests/drivers/xylo/test_asc_nir_example.py."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from hilbench.store import Store
from hilbench.workloads.asc.nir.graph import (
    packaged_graph,
    packaged_graph_path,
    packaged_test_spikes,
)
from hilbench.workloads.asc.procedures.run import cache_dir, ensure_fixture
from tests.subprocesses import hilbench, run_campaign, unit_runs

pytest.importorskip("nir")
pytestmark = pytest.mark.timeout(300)

GRAPH_SHA = "d1120d3ed08e21d4e95ccea71bab93526b8c71dac523eb6edf2efda44fc7601d"


def _campaign(folder: Path, model: str, *, driver: str = "cpu", limit: int = 1) -> Path:
    path = folder / "nir.toml"
    path.write_text(f"""
[campaign]
name = "nir-t"
[[agents]]
id = "dev0"
driver = "{driver}"
spawn = true
[[asc]]
agent = "dev0"
fixture = true
model = "{model}"
sample_rate = 16000
limit = {limit}
""")
    return path


def _check(path: Path):
    return hilbench("campaign", "check", path, timeout=120)


def test_the_packaged_graph_hash_is_the_one_named():
    assert packaged_graph().sha256 == GRAPH_SHA


def test_check_names_the_graph_by_its_content_hash(tmp_path):
    shutil.copy(packaged_graph_path(), tmp_path / "asc.nir")
    proc = _check(_campaign(tmp_path, "asc.nir"))
    assert proc.returncode == 0, proc.stderr
    assert f"graph sha256 {GRAPH_SHA} (closed category)" in proc.stdout
    assert "[[asc]] #1 model: NIR graph" in proc.stdout


@pytest.mark.parametrize("how", ["dotdot", "absolute", "link"])
def test_a_graph_outside_the_campaign_folder_is_refused_in_one_line(tmp_path, how):
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    shutil.copy(packaged_graph_path(), outside / "asc.nir")
    folder = tmp_path / "campaigns"
    folder.mkdir()
    if how == "link":
        (folder / "asc.nir").symlink_to(outside / "asc.nir")
        model = "asc.nir"
    else:
        model = "../elsewhere/asc.nir" if how == "dotdot" else str(outside / "asc.nir")
    path = _campaign(folder, model)
    proc = _check(path)
    assert proc.returncode == 2, proc.stdout
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, proc.stderr
    assert str(path) in lines[0] and "model" in lines[0], lines[0]
    assert "campaign file's folder" in lines[0], lines[0]
    assert "Traceback" not in proc.stderr


@pytest.mark.parametrize("content", [b"not a graph at all\n", b"\x89HDF\r\n\x1a\n" + b"\0" * 64])
def test_a_damaged_graph_is_refused_in_one_line(tmp_path, content):
    (tmp_path / "bad.nir").write_bytes(content)
    path = _campaign(tmp_path, "bad.nir")
    proc = _check(path)
    assert proc.returncode == 2, proc.stdout
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, proc.stderr
    assert str(path) in lines[0] and "model" in lines[0] and "bad.nir" in lines[0], lines[0]
    assert "Traceback" not in proc.stderr


def test_a_driver_that_cannot_run_nir_is_refused_at_the_gate_with_its_reason(tmp_path):
    path = _campaign(tmp_path, "packaged-nir", driver="loihi")
    db = tmp_path / "never.sqlite"
    for args in (("campaign", "check", path), ("run", path, "--db", db)):
        proc = hilbench(*args, timeout=120)
        assert proc.returncode == 2, proc.stdout
        lines = [line for line in proc.stderr.splitlines() if line.strip()]
        assert len(lines) == 1, proc.stderr
        assert f"{path} [[asc]] #1 model: the driver cannot run NIR graphs: the pinned Lava" \
            in lines[0], lines[0]
        assert "(driver loihi of agent dev0)" in lines[0], lines[0]
    assert not db.exists()


def test_a_device_declaring_no_nir_support_is_refused_before_the_graph_is_sent():
    import msgspec

    from hilbench.contracts.capabilities import Capabilities
    from hilbench.wire.link import AgentError
    from hilbench.workloads.asc.procedures.nir import require_nir_device

    class Remote:  # what send_model sees of a remote agent: its name and decoded handshake
        name = "far0"
        capabilities = msgspec.convert({"workloads": ["asc"], "asc": {}}, Capabilities)

    with pytest.raises(AgentError) as caught:
        require_nir_device(Remote())
    assert str(caught.value) == ("agent far0: cannot_run_nir: agent far0 declares no NIR "
                                 "support, so it cannot run a NIR graph")
    Remote.capabilities = msgspec.convert(
        {"workloads": ["asc"], "nir": {"runs": False, "reason": "no NIR reader"}}, Capabilities)
    with pytest.raises(AgentError, match=r"agent far0 cannot run NIR graphs: no NIR reader$"):
        require_nir_device(Remote())


@pytest.fixture(scope="module")
def cpu_run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("nir-cpu")
    ensure_fixture(cache_dir() / "asc-fixture-0", seed=0)  # the fixture the rasters belong to
    shutil.copy(packaged_graph_path(), tmp / "asc.nir")
    db = tmp / "r.sqlite"
    proc = run_campaign(_campaign(tmp, "asc.nir", limit=2), db, "--record", str(tmp / "cas"),
                        timeout=240)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    with Store(db) as store:
        runs = unit_runs(store)
        assert len(runs) == 1
        metrics = {m["name"]: m for m in store.metrics(runs[0]["uid"])}
        samples = store.events(runs[0]["uid"], "sample")
    return runs[0], metrics, samples, tmp / "cas"


def test_a_replay_recomputes_the_reference_check_and_the_metrics(cpu_run):
    *_, cassette = cpu_run
    proc = hilbench("replay", cassette, "--analysis-only", timeout=240)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    # 6 single-stream figures + agreement + 7 algorithm metrics + modelled energy
    assert "15 figure(s) recomputed, all equal to the recorded ones" in proc.stdout


def test_a_cpu_run_is_labelled_closed_with_the_graph_hash(cpu_run):
    run, *_ = cpu_run
    assert run["status"] == "success"
    assert run["params"]["category"] == "closed"
    assert run["params"]["graph_sha256"] == GRAPH_SHA
    assert run["params"]["model_info"]["graph_sha256"] == GRAPH_SHA


def test_a_cpu_run_agrees_with_the_reference_and_stores_it(cpu_run):
    _, metrics, samples, _ = cpu_run
    agreement = metrics["nir_reference_agreement"]
    assert agreement["value"] == 1.0
    assert agreement["meta"]["samples"] == len(samples) == 20
    assert agreement["meta"]["threshold"] == 0.99
    assert agreement["meta"]["device_semantics"]["reset"] == "value"  # NIR 1.0: no conventions


def test_a_cpu_run_stores_the_algorithm_metrics_of_the_samples_it_ran(cpu_run):
    """The figures equal the metrics computed here from the AFESim rasters of exactly the
    samples the run's events name (two clips of the test split, found by their audio)."""
    from hilbench.complexity import algorithm_metrics, modelled_energy
    from hilbench.nir.reference import run_reference
    from hilbench.workloads.asc import load_split
    from hilbench.workloads.asc.nir.inputs import SpikeInputs

    _, metrics, samples, _ = cpu_run
    asc = packaged_graph()
    test = load_split(cache_dir() / "asc-fixture-0", "test", sample_rate=16000, limit=2)
    inputs = SpikeInputs(asc)
    rasters = [inputs.raster(test.slices[int(s["data"]["index"])]) for s in samples]
    assert len(rasters) == 20
    expected = algorithm_metrics(asc.graph, run_reference(asc.graph, rasters, asc.dt).activity)
    ops = expected.synaptic_operations
    assert metrics["footprint_bytes"]["value"] == expected.footprint_bytes == 14352
    assert metrics["connection_sparsity"]["value"] == pytest.approx(expected.connection_sparsity)
    assert metrics["activation_sparsity"]["value"] == pytest.approx(expected.activation_sparsity)
    assert 0 < metrics["activation_sparsity"]["value"] < 1
    assert metrics["synaptic_ops_dense"]["value"] == ops.dense == 268800
    assert metrics["synaptic_ops_effective_macs"]["value"] == pytest.approx(ops.effective_macs)
    assert metrics["synaptic_ops_effective_acs"]["value"] == pytest.approx(ops.effective_acs)
    assert metrics["neuron_updates"]["value"] == pytest.approx(expected.neuron_updates)
    modelled = metrics["modelled_energy_per_inference_j"]
    assert modelled["value"] == pytest.approx(modelled_energy(ops).energy_j)
    assert modelled["value"] == pytest.approx(ops.effective_macs * 4.6e-12
                                              + ops.effective_acs * 0.9e-12)
    assert modelled["meta"]["label"] == "modelled"


def test_classes_that_disagree_with_the_reference_fail_the_check():
    from hilbench.nir.reference import run_reference
    from hilbench.workloads.asc.nir.agreement import check_against_reference

    asc = packaged_graph()
    rasters = list(packaged_test_spikes().rasters[:20])
    truth = run_reference(asc.graph, rasters, asc.dt, record=False).predicted
    right = check_against_reference(asc, rasters, range(20), truth, {})
    assert right.passed and right.agree == 20
    wrong = np.array(truth)
    wrong[3] = (wrong[3] + 1) % 4  # one class of 20 differs: 95 % < 99 %
    checked = check_against_reference(asc, rasters, range(20), wrong, {})
    assert not checked.passed and checked.agree == 19 and checked.disagreeing == [3]


def test_the_closed_path_runs_without_torch():
    """The default set-up installs no torch: the campaign's NIR path (model file, the CPU
    driver's executor, the reference check and the metrics) imports none."""
    import subprocess
    import sys

    code = (
        "import sys\n"
        "for name in ('torch', 'nirtorch', 'snntorch', 'norse', 'neurobench', 'rockpool'):\n"
        "    sys.modules[name] = None\n"
        "from hilbench.workloads.asc.nir.graph import packaged_graph_path, packaged_test_spikes\n"
        "from hilbench.workloads.asc.nir.model import NirAscModel\n"
        "from hilbench.workloads.asc.nir.agreement import check_against_reference\n"
        "from hilbench_drivers.cpu.asc_nir import NirCpuModel\n"
        "model = NirAscModel(packaged_graph_path())\n"
        "device = NirCpuModel(model.metadata(), model.arrays())\n"
        "rasters = list(packaged_test_spikes().rasters[:3])\n"
        "predicted = [device.infer(r)[1] for r in rasters]\n"
        "check = check_against_reference(model.asc, rasters, range(3), predicted, {})\n"
        "assert check.passed and check.agree == 3, check\n"
        "print(device.asc.sha256)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == GRAPH_SHA


def test_a_load_whose_graph_does_not_match_its_claimed_hash_is_rejected():
    from hilbench.agent.driver import DriverError
    from hilbench.workloads.asc.nir.model import NirAscModel
    from hilbench_drivers.cpu.asc_nir import NirCpuModel

    model = NirAscModel(packaged_graph_path())
    meta = {**model.metadata(), "graph_sha256": "0" * 64}
    with pytest.raises(DriverError, match="the graph's content hash is d1120d3e"):
        NirCpuModel(meta, model.arrays())
    with pytest.raises(DriverError, match="one uint8 1-D payload"):
        NirCpuModel(model.metadata(), {"graph": model.arrays()["graph"].astype(np.int16)})


def test_a_run_whose_classes_disagree_fails_loudly_after_storing_the_check():
    """The glue a single-stream run calls: the agreement, the metrics and the modelled energy
    are emitted (so the store keeps them), then the run fails naming the samples."""
    from types import SimpleNamespace

    from hilbench.nir.reference import run_reference
    from hilbench.wire.link import AgentError
    from hilbench.workloads.asc import load_split
    from hilbench.workloads.asc.nir.inputs import SpikeInputs
    from hilbench.workloads.asc.nir.model import NirAscModel
    from hilbench.workloads.asc.procedures.nir import check_and_emit

    root = ensure_fixture(cache_dir() / "asc-fixture-0", seed=0)
    test = load_split(root, "test", sample_rate=16000, limit=1)
    model = NirAscModel(packaged_graph_path())
    inputs = SpikeInputs(model.asc)
    truth = run_reference(model.asc.graph, [inputs.raster(a) for a in test.slices],
                          model.asc.dt, record=False).predicted
    records = [SimpleNamespace(index=i, predicted=int(c)) for i, c in enumerate(truth)]
    records[4].predicted = (records[4].predicted + 1) % 4
    emitted = []
    ctx = SimpleNamespace(run_uid="r1", emit=emitted.append)
    with pytest.raises(AgentError, match=r"reference_mismatch: .* on 9/10 samples \(90\.0 %, "
                                         r"below 99 %\); first disagreeing samples \[4\]"):
        check_and_emit(ctx, model, test, records, {"semantics": {}}, "dev0")
    names = [m.name for m in emitted]
    assert names[0] == "nir_reference_agreement" and emitted[0].value == 0.9
    assert {"activation_sparsity", "synaptic_ops_effective_macs",
            "modelled_energy_per_inference_j"} <= set(names)
