"""`hilbench audit export` / `verify` on a real campaign from the simulated bench: an untouched
bundle passes, a changed byte of a raw sample file or a changed stored metric fails, named."""

from __future__ import annotations

import json
import shutil

import pytest

from hilbench.cassette.bundle import MANIFEST
from tests.subprocesses import hilbench

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def bundle(recorded, tmp_path_factory):
    _path, db, _cassette = recorded
    out = tmp_path_factory.mktemp("audit") / "bundle"
    done = hilbench("audit", "export", "faulty-meter", "--db", db, "--out", out)
    assert done.returncode == 0, done.stderr
    return out


def _verify(path):
    return hilbench("audit", "verify", path)


@pytest.fixture(scope="module")
def asc_bundle(recorded_asc, tmp_path_factory):
    out = tmp_path_factory.mktemp("audit-asc") / "bundle"
    done = hilbench("audit", "export", "asc-cpu", "--db", recorded_asc, "--out", out)
    assert done.returncode == 0, done.stderr
    return out


# per bundle: a figure recomputed from raw samples that its test changes
CHANGED = {"bundle": "avg_power_w", "asc_bundle": "energy_per_inference_j.inference"}


@pytest.fixture(params=sorted(CHANGED))
def either(request):
    """The QUBO bundle and the ASC bundle in turn, with the name of a figure to change."""
    return request.getfixturevalue(request.param), CHANGED[request.param]


def test_an_untouched_bundle_verifies(either):
    bundle, _ = either
    done = _verify(bundle)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "every hash agrees" in done.stdout
    assert "only hash-checked" not in done.stderr
    checked = int(done.stdout.split("; ")[1].split()[0])
    recorded = sum(1 for line in (bundle / "data" / "documents.jsonl").open()
                   if json.loads(line)["kind"] == "metric")
    assert checked == recorded  # every stored figure recomputed
    assert (bundle / "bagit.txt").read_text().startswith("BagIt-Version: 1.0")


def test_one_changed_byte_of_a_raw_sample_file_fails_naming_it(either, tmp_path):
    bundle, _ = either
    copy = tmp_path / "b"
    shutil.copytree(bundle, copy)
    target = sorted((copy / "data" / "samples").glob("*.values"))[0]
    data = bytearray(target.read_bytes())
    data[len(data) // 2] ^= 0x01
    target.write_bytes(bytes(data))
    done = _verify(copy)
    assert done.returncode == 1
    assert f"data/samples/{target.name}: sha256 differs" in done.stdout


def test_a_changed_stored_metric_fails_naming_it_and_the_recomputed_value(either, tmp_path):
    bundle, name = either
    found = {}

    def change(lines):
        metric = next(d for d in lines if d["kind"] == "metric" and d["name"] == name
                      and d["value"] is not None)
        found.update(metric)
        metric["value"] *= 1.01

    copy = _tamper(bundle, tmp_path, change)
    metric, true_value = found, found["value"]
    done = _verify(copy)
    assert done.returncode == 1, done.stdout
    (line,) = done.stdout.splitlines()
    assert f"run {metric['run_uid'][:8]}" in line
    assert f"metric {name} stored" in line
    recomputed = float(line.rsplit("recomputed ", 1)[1])
    assert recomputed == pytest.approx(true_value, rel=1e-12)


def test_a_folder_that_is_not_a_bundle_is_a_usage_error_in_one_line(tmp_path):
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "documents.jsonl").write_text("{not json\n")
    done = _verify(tmp_path)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.splitlines() == [
        f"error: {tmp_path} is not an audit bundle: it has no {MANIFEST} and no bagit.txt "
        "(`hilbench audit export` writes them)"]


def test_a_bundle_without_its_payload_manifest_fails_naming_each_cause(bundle, tmp_path):
    copy = tmp_path / "b"
    shutil.copytree(bundle, copy)
    (copy / MANIFEST).unlink()
    (copy / "data" / "manifest.json").unlink()
    done = _verify(copy)
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert f"{copy / MANIFEST}: missing" in done.stdout
    assert "no manifest.json" in done.stdout


def _tamper(bundle, tmp_path, change):
    """A copy of ``bundle`` whose documents ``change`` edits in place, with the hash manifest
    rewritten to match (a tamperer who knows the format): only recomputation can catch it."""
    from hilbench.cassette.bundle import write_bag_files

    copy = tmp_path / "b"
    shutil.copytree(bundle, copy)
    documents = copy / "data" / "documents.jsonl"
    lines = [json.loads(line) for line in documents.read_text().splitlines()]
    change(lines)
    documents.write_text("".join(json.dumps(d) + "\n" for d in lines))
    for name in (MANIFEST, "bagit.txt", "bag-info.txt"):
        (copy / name).unlink()
    write_bag_files(copy, "tampered")
    return copy


def _phase_of_a_success(lines: list[dict], name: str) -> dict:
    """The first phase ``name`` of a successful run (an unverified one is not re-analysed)."""
    good = {d["uid"] for d in lines if d["kind"] == "run" and d["status"] == "success"}
    return next(d for d in lines
                if d["kind"] == "phase" and d["name"] == name and d["run_uid"] in good)


def test_a_clock_offset_outside_its_bounds_fails(bundle, tmp_path):
    def shift(lines):
        solve = _phase_of_a_success(lines, "solve")
        solve["clock_offsets"]["cpu0"]["offset_s"] += 1.0  # claims the device ran 1 s earlier

    done = _verify(_tamper(bundle, tmp_path, shift))
    assert done.returncode == 1
    assert "timing inconsistent: the claimed timed region starts" in done.stdout

    def overconfident(lines):
        load = _phase_of_a_success(lines, "load")
        load["clock_offsets"]["cpu0"]["uncertainty_s"] /= 4

    done = _verify(_tamper(bundle, tmp_path / "2", overconfident))
    assert done.returncode == 1
    (line,) = done.stdout.splitlines()
    assert "clock offset of cpu0 in phase load: uncertainty" in line


def test_samples_taken_with_other_settings_than_the_campaigns_fail(bundle, tmp_path):
    from hilbench.cassette.bundle import write_bag_files

    copy = tmp_path / "b"
    shutil.copytree(bundle, copy)
    row = copy / "data" / "campaign.json"
    campaign = json.loads(row.read_text())
    campaign["config"]["instruments"][0]["settings"]["supply_voltage_v"] = 5.0
    campaign["config"]["instruments"][0]["settings"]["sample_interval_s"] = 0.02
    row.write_text(json.dumps(campaign))
    for name in (MANIFEST, "bagit.txt", "bag-info.txt"):
        (copy / name).unlink()
    write_bag_files(copy, "tampered")
    done = _verify(copy)
    assert done.returncode == 1
    assert "instrument dmm: samples" in done.stdout and "the campaign sets 5.0 V" in done.stdout
    assert "s apart, the campaign sets 0.02 s" in done.stdout


def test_a_changed_energy_to_solution_fails_naming_it(bundle, tmp_path):
    def change(lines):
        metric = next(d for d in lines if d["kind"] == "metric"
                      and d["name"] == "tts_energy_j@0.2")
        assert metric["value"] is not None  # the fixture's run reached the gap, measured
        metric["value"] *= 0.97

    done = _verify(_tamper(bundle, tmp_path, change))
    assert done.returncode == 1
    (line,) = done.stdout.splitlines()
    assert "metric tts_energy_j@0.2 stored" in line and "recomputed" in line


@pytest.mark.parametrize(("factor", "flagged"), [(1.04, False), (1.06, True)])
def test_the_5_trial_rule_holds_the_reported_figure_to_the_recomputed_trials(
        bundle, tmp_path, factor, flagged):
    """Both fixed-timeout runs (one replicate group) stored ``factor`` × their true power: each
    is named, and the group breaks the rule only beyond 5 %."""
    def change(lines):
        for d in lines:
            if d["kind"] == "metric" and d["name"] == "avg_power_w" and d["value"] is not None:
                d["value"] *= factor

    done = _verify(_tamper(bundle, tmp_path, change))
    assert done.returncode == 1
    lines = done.stdout.splitlines()
    assert sum("metric avg_power_w stored" in line for line in lines) >= 2
    rule = [line for line in lines if "not within 5 % of the reported" in line]
    assert bool(rule) == flagged, lines
    if flagged:
        assert all("avg_power_w" in line and "seed=*" in line for line in rule)


def test_an_asc_device_region_outside_the_clock_offset_bound_fails(asc_bundle, tmp_path):
    """The single-stream phase's offset moved by 1 s: the device's sample regions no longer
    fit the orchestrator's request→reply windows, as the live run checked them."""
    def shift(lines):
        phase = _phase_of_a_success(lines, "single_stream")
        agent = next(iter(phase["clock_offsets"]))
        phase["clock_offsets"][agent]["offset_s"] += 1.0

    done = _verify(_tamper(asc_bundle, tmp_path, shift))
    assert done.returncode == 1
    (line,) = done.stdout.splitlines()
    assert "(asc/single_stream/" in line and "timing: agent" in line
    assert "timing_inconsistent" in line
    assert "sample 0:" in line
