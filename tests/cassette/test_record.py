"""`hilbench run --record DIR` writes a cassette that holds the run exactly, compactly and
owner-only, and a recording cut short keeps what came before the cut."""

from __future__ import annotations

import hashlib
import json
import os
import stat

import numpy as np
import pytest

from hilbench.cassette.arrays import StreamWriter, read_stream
from hilbench.cassette.reader import Cassette
from hilbench.store import Store


def test_cassette_holds_manifest_documents_and_exact_samples(recorded):
    campaign_file, db, folder = recorded
    cassette = Cassette(folder)
    manifest = cassette.manifest
    assert manifest["format_version"] == 1
    assert manifest["campaign_file"]["sha256"] == hashlib.sha256(
        campaign_file.read_bytes()).hexdigest()
    assert "numpy" in manifest["packages"] and manifest["python"]
    assert "qubo" in manifest["agents"]["cpu0"]["capabilities"]
    dmm = manifest["instruments"]["dmm"]
    assert dmm["settings"]["sample_interval_s"] == 0.01
    assert dmm["identity"]["supply_voltage_v"] == 12.0
    kinds = [d["kind"] for d in cassette.documents()]
    runs = kinds.count("run_start")  # three units, and any unverified attempt of a loaded host
    assert runs >= 3 and "samples" not in kinds
    assert manifest["clock_offsets"]["cpu0"]["phases"] == 2 * runs  # load + solve each
    assert cassette.check_hashes() == []
    with Store(db) as store:
        runs = store.runs()
        streams = cassette.streams()
        # every run measured has its streams (an unverified attempt may have been cut short)
        good = {r["uid"] for r in runs if r["status"] == "success"}
        assert good <= {s.run_uid for s in streams} <= {r["uid"] for r in runs}
        for stream in streams:
            assert stream.sha256 is not None  # sealed when its phase stopped
            t, values = cassette.read(stream)
            t0, v0 = store.samples(stream.run_uid, stream.source, phase_uid=stream.phase_uid)
            assert len(t) == stream.samples > 0
            assert np.array_equal(t, t0) and np.array_equal(values, v0)  # bit for bit
            assert stream.meta["supply_voltage_v"] == 12.0
        metrics = {(m["run_uid"], m["name"]): m["value"] for m in store.metrics()}
    recorded_metrics = {(d["run_uid"], d["name"]): d["value"] for d in cassette.documents()
                        if d["kind"] == "metric"}
    assert recorded_metrics == metrics
    for root, dirs, files in os.walk(folder):
        for name in dirs + files:
            mode = stat.S_IMODE(os.stat(os.path.join(root, name)).st_mode)
            assert mode & 0o077 == 0, (name, oct(mode))
    assert not any(name.endswith((".npy", ".json")) and name != "manifest.json"
                   for name in os.listdir(folder / "samples"))


def _meter_batches(n: int, batch: int, dt: float = 0.001, t0: float = 8123.4567):
    """Stamps as the Keysight driver makes them (t0 + k·dt), readings noisy around 2 A."""
    rng = np.random.default_rng(1)
    for start in range(0, n, batch):
        index = start + np.arange(min(batch, n - start), dtype=np.float64)
        yield t0 + index * dt, 2.0 + 0.01 * rng.standard_normal(len(index))


def test_one_hour_at_1_khz_takes_at_most_1_2_times_its_float64_size(tmp_path):
    n = 3600 * 1000
    writer = StreamWriter(tmp_path, "hour")
    kept_t, kept_v = [], []
    for i, (t, v) in enumerate(_meter_batches(n, batch=1000)):
        writer.append(t, v)
        if i % 600 == 0:
            kept_t.append(t)
            kept_v.append(v)
    writer.close()
    size = sum(p.stat().st_size for p in tmp_path.iterdir())
    ratio = size / (8 * n)
    assert ratio <= 1.2, ratio
    t, v = read_stream(tmp_path, "hour")
    assert len(t) == n
    for kt, kv in zip(kept_t, kept_v, strict=True):  # stamps restored bit for bit
        at = int(np.searchsorted(t, kt[0]))
        assert np.array_equal(t[at: at + len(kt)], kt)
        assert np.array_equal(v[at: at + len(kv)], kv)


def test_irregular_stamps_are_kept_exactly(tmp_path):
    rng = np.random.default_rng(2)
    batches = [np.cumsum(rng.exponential(0.01, 50)) + 100.0, np.array([5.0]),
               np.array([1.0, 1.0 + 2 ** -40, 3.0]), np.array([-1.0, 0.0, 1.0])]
    writer = StreamWriter(tmp_path, "odd")
    for t in batches:
        writer.append(t, np.ones(len(t)))
    writer.close()
    t, _ = read_stream(tmp_path, "odd")
    assert np.array_equal(t, np.concatenate(batches))


class _StopSignalInFlush:
    """A file whose next flush raises, as a stop signal's handler does (``Interrupted``)."""

    def __init__(self, fh) -> None:
        self.fh = fh
        self.armed = True

    def write(self, data: bytes) -> int:
        return self.fh.write(data)

    def flush(self) -> None:
        self.fh.flush()
        if self.armed:
            self.armed = False
            raise KeyboardInterrupt

    def close(self) -> None:
        self.fh.close()


def test_an_append_cut_short_still_seals_with_the_files_own_hashes_and_count(tmp_path):
    """A stop signal inside an append (after the values and the stamps were written, before
    the index): the seal cuts the files back to the index's whole batches and records their own
    sha256 and count, so the cassette checks clean and reads back (a README test run once
    recorded a stamps hash of nothing for a file of 22 bytes)."""
    writer = StreamWriter(tmp_path, "cut")
    first, second = _meter_batches(2000, batch=1000)
    writer.append(*first)
    writer._files["stamps"] = _StopSignalInFlush(writer._files["stamps"])
    with pytest.raises(KeyboardInterrupt):
        writer.append(*second)
    hashes = writer.close()
    assert hashes == {s: hashlib.sha256((tmp_path / f"cut.{s}").read_bytes()).hexdigest()
                      for s in ("values", "stamps", "index")}
    assert writer.samples == 1000  # the second batch's index row was never written
    t, _ = read_stream(tmp_path, "cut", writer.samples)
    assert np.array_equal(t, first[0])


def test_a_recording_cut_short_keeps_the_whole_batches_before_the_cut(tmp_path):
    writer = StreamWriter(tmp_path, "cut")
    batches = list(_meter_batches(3000, batch=1000))
    for t, v in batches:
        writer.append(t, v)
    # Killed: no close, and the last batch's values only half written.
    values = tmp_path / "cut.values"
    values.write_bytes(values.read_bytes()[: 8 * 2500])
    t, v = read_stream(tmp_path, "cut")
    assert np.array_equal(t, np.concatenate([b[0] for b in batches[:2]]))
    assert np.array_equal(v, np.concatenate([b[1] for b in batches[:2]]))


@pytest.mark.slow
def test_record_refuses_a_folder_that_holds_files(tmp_path):
    from tests.campaign_toml import agent, campaign, qubo, write_campaign
    from tests.subprocesses import run_campaign

    full = tmp_path / "full"
    full.mkdir()
    (full / "mine.txt").write_text("keep")
    path = write_campaign(tmp_path, campaign(agent(), qubo()))
    done = run_campaign(path, tmp_path / "s.sqlite", "--record", str(full), timeout=60)
    assert done.returncode == 2 and "not empty" in done.stderr
    assert (full / "mine.txt").read_text() == "keep" and len(os.listdir(full)) == 1


@pytest.mark.parametrize("name", ["documents.jsonl", "samples.jsonl"])
def test_every_line_is_json(recorded, name):
    for line in (recorded[2] / name).read_text().splitlines():
        json.loads(line)


@pytest.mark.slow
def test_a_killed_recording_keeps_every_finished_run(tmp_path):
    """SIGKILL mid-campaign: the cassette still reads, with every document and sample of each
    run the store completed, bit for bit."""
    import signal
    import subprocess

    from hilbench.sim import SimulatedMeter
    from hilbench.sim.power_model import SIMULATED_CPU
    from tests.campaign_toml import write_campaign
    from tests.orchestrator.test_instrument_faults import meter_campaign
    from tests.subprocesses import hilbench_command, wait_for_run

    db, folder = tmp_path / "s.sqlite", tmp_path / "cassette"
    with SimulatedMeter(SIMULATED_CPU, noise_std_w=0.05, seed=3) as meter:
        path = write_campaign(tmp_path, meter_campaign(meter, seeds=range(30)))
        proc = subprocess.Popen(hilbench_command("run", path, "--db", db, "-q", "--record",
                                                 folder), stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
        try:
            wait_for_run(db, proc)
            proc.send_signal(signal.SIGKILL)
        finally:
            proc.wait(30)
    cassette = Cassette(folder)
    with Store(db) as store:
        done = [r["uid"] for r in store.runs() if r["status"] == "success"]
        assert done and len(done) < 30
        documents = list(cassette.documents())
        for uid in done:
            assert any(d["kind"] == "run_stop" and d["run_uid"] == uid for d in documents)
            stored = {m["name"]: m["value"] for m in store.metrics(uid)}
            kept = {d["name"]: d["value"] for d in documents
                    if d["kind"] == "metric" and d["run_uid"] == uid}
            assert kept == stored
            streams = [s for s in cassette.streams() if s.run_uid == uid]
            assert streams and all(s.sha256 for s in streams)
            for stream in streams:
                t, values = cassette.read(stream)
                t0, v0 = store.samples(uid, stream.source, phase_uid=stream.phase_uid)
                assert np.array_equal(t, t0) and np.array_equal(values, v0)
    assert cassette.check_hashes() == []
