"""`hilbench replay --analysis-only` on the repository's cassettes (tests/cassettes/, recorded
from each driver's simulated path by tests/cassettes/rerecord.sh): every recorded figure is
computed again by the live analysis code and must come out exactly as recorded; a changed
figure, or a bug put into the analysis, is named."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from hilbench.cassette.analysis import compare_recording
from tests.subprocesses import hilbench

CASSETTES = Path(__file__).resolve().parents[1] / "cassettes"
NAMES = sorted(p.stem for p in (CASSETTES / "campaigns").glob("*.toml"))


def test_the_repository_carries_cassettes_of_the_simulated_paths():
    assert {"qubo-cpu", "asc-cpu", "asc-arduino", "asc-xylo", "qubo-loihi"} <= set(NAMES)
    recorded = {p.name for p in CASSETTES.iterdir() if (p / "manifest.json").is_file()}
    assert recorded == set(NAMES)  # each cassette has the campaign it is recorded from


@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
def test_each_repository_cassette_replays_to_its_recorded_figures(name, cassette):
    folder = cassette(name, CASSETTES / "campaigns" / f"{name}.toml")  # --record-mode
    done = hilbench("replay", folder, "--analysis-only")
    assert done.returncode == 0, done.stdout + done.stderr
    compared = int(done.stdout.split(": ")[1].split()[0])
    recorded = sum(1 for line in (folder / "documents.jsonl").open()
                   if json.loads(line)["kind"] == "metric")
    assert compared == recorded  # every recorded figure, none skipped


@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
def test_each_repository_cassette_replays_through_stand_ins_to_its_figures(name):
    """The whole recorded campaign run again by the real orchestrator against stand-in agents
    and instruments fed from the cassette (the Xylo and Loihi procedure paths included, in an
    environment without Rockpool or Lava)."""
    done = hilbench("replay", CASSETTES / name)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "every figure agrees" in done.stdout


def test_the_asc_replay_recomputes_power_and_energy_from_the_raw_samples():
    outcome = compare_recording(CASSETTES / "asc-cpu")
    names = {name for _uid, name in outcome.figures}
    assert {"accuracy", "inference_time_s", "idle_power_w", "active_power_w.inference",
            "dynamic_power_w.inference", "energy_per_inference_j.inference"} <= names
    assert not outcome.differences


def _copy_with(tmp_path, name, change):
    copy = tmp_path / name
    shutil.copytree(CASSETTES / name, copy)
    path = copy / "documents.jsonl"
    docs = [json.loads(line) for line in path.read_text().splitlines()]
    change(docs)
    path.write_text("".join(json.dumps(d) + "\n" for d in docs))
    return copy


@pytest.mark.slow
def test_a_changed_recorded_figure_fails_naming_it_and_the_recomputed_value(tmp_path):
    found = {}

    def change(docs):
        metric = next(d for d in docs if d["kind"] == "metric"
                      and d["name"] == "dynamic_power_w.inference")
        found.update(metric)
        metric["value"] *= 1.000001

    done = hilbench("replay", _copy_with(tmp_path, "asc-cpu", change), "--analysis-only")
    assert done.returncode == 1
    (line,) = done.stdout.splitlines()
    assert f"run {found['run_uid'][:8]}" in line
    assert "metric dynamic_power_w.inference stored" in line
    assert float(line.rsplit("recomputed ", 1)[1]) == found["value"]


def test_a_changed_raw_sample_changes_the_power_figures(tmp_path):
    copy = tmp_path / "asc-cpu"
    shutil.copytree(CASSETTES / "asc-cpu", copy)
    values = sorted((copy / "samples").glob("*.values"))[-1]  # the last active window
    data = bytearray(values.read_bytes())
    data[len(data) // 2 + 7] ^= 0x40  # a high exponent bit of one reading
    values.write_bytes(bytes(data))
    outcome = compare_recording(copy)
    assert f"{values}: sha256 differs from the one recorded" in outcome.differences
    assert any("metric active_power_w.inference stored" in d for d in outcome.differences)


def test_a_bug_in_the_analysis_fails_the_cassette_replay(monkeypatch):
    """Energy per inference computed from the loop time in the power window instead of the
    single-stream time: the replay of the recorded ASC cassette names every energy figure."""
    from hilbench.workloads.asc.procedures import figures as asc_figures

    correct = asc_figures.energy_figure
    monkeypatch.setattr(asc_figures, "energy_figure",
                        lambda dynamic, single_stream, loop, *more: correct(dynamic, loop, loop,
                                                                            *more))
    outcome = compare_recording(CASSETTES / "asc-cpu")
    wrong = [d for d in outcome.differences if "metric energy_per_inference_j." in d]
    assert {d.split("metric ")[1].split()[0] for d in wrong} == {
        "energy_per_inference_j.preprocessing", "energy_per_inference_j.inference"}
    monkeypatch.undo()
    assert not compare_recording(CASSETTES / "asc-cpu").differences


def test_the_xylo_and_loihi_cassettes_replay_where_rockpool_and_lava_are_not_installed():
    """The main environment has neither vendor stack, and replaying their cassettes imports
    neither: the procedure paths of those drivers are checked without them."""
    import importlib.util
    import sys

    assert importlib.util.find_spec("rockpool") is None
    assert importlib.util.find_spec("lava") is None  # nor in the replay subprocesses above
    for name, figures in (("asc-xylo", "energy_per_inference_j.inference"),
                          ("qubo-loihi", "bks_gap")):
        outcome = compare_recording(CASSETTES / name)
        assert not outcome.differences, outcome.differences
        assert figures in {metric for _uid, metric in outcome.figures}
    assert not {"rockpool", "lava", "samna"} & set(sys.modules)
