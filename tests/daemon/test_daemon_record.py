"""`queue add --record DIR`: the daemon writes the cassette `hilbench run --record` writes, from
the item's snapshot of its campaign file, and a restarted daemon goes on with the same one."""

from __future__ import annotations

import hashlib
import signal
from collections import Counter

import numpy as np
import pytest

from hilbench.bench.bench_campaign import campaign_file
from hilbench.cassette.reader import Cassette
from hilbench.store import Store
from tests.daemon.conftest import history
from tests.subprocesses import hilbench, hilbench_here

UNITS = 48


# Not serial: a unit a loaded host leaves unverified after its attempts is allowed below (at
# most 4 of 48); what it holds is the cassette, whole through the SIGKILL.
@pytest.mark.slow
def test_the_daemon_records_a_cassette_that_survives_a_sigkill(tmp_path, daemon_at):
    db, folder = tmp_path / "d.sqlite", tmp_path / "cassette"
    # 48 units of about 0.12 s: the kill at five done must land with work left. With 24 (3 s in
    # all) the daemon's status in CI-32 said five done after the 24th had ended, and the kill
    # found nothing to continue.
    path = campaign_file(tmp_path, "recorded", UNITS, timeout_s=0.02)  # simulated meter, 1 kHz
    queued = path.read_bytes()
    assert hilbench_here("queue", "add", path, "--db", db, "--record", folder).returncode == 0
    path.write_text(queued.decode() + "\n# edited after it was queued\n")
    d = daemon_at(db).start()
    d.wait_until(lambda s: (s["current"] or {}).get("done", 0) >= 5, "five units done")
    assert d.signal(signal.SIGKILL) == -signal.SIGKILL
    d.start()
    d.wait_until(lambda s: history(db) and s["daemon"]["state"] == "idle", "the item finished")
    assert history(db)[0]["exit_status"] == "completed"

    cassette = Cassette(folder)
    manifest = cassette.manifest
    assert manifest["campaign_file"] == {"name": "recorded.toml",
                                         "sha256": hashlib.sha256(queued).hexdigest()}
    assert "continued" in manifest, "the kill came after the item's last unit: nothing left"
    assert len(manifest["continued"]) == 1  # the restarted worker went on with it
    assert manifest["simulated"] and "dmm" in manifest["instruments"]
    docs = list(cassette.documents())  # every line whole: nothing cut, nothing interleaved
    with Store(db) as store:
        runs = {r["uid"]: r for r in store.runs()}
        assert {d["uid"] for d in docs if d["kind"] == "run_start"} == set(runs)
        stops = {d["run_uid"]: d["exit_status"] for d in docs if d["kind"] == "run_stop"}
        assert stops == {uid: r["status"] for uid, r in runs.items()}
        # every unit, each a success once (or, on a loaded host, unverified after its attempts);
        # a run the kill cut short (none if it fell between runs) as 'abort'
        by_unit: dict[str, Counter] = {}
        for uid, status in stops.items():
            by_unit.setdefault(runs[uid]["unit_key"], Counter())[status] += 1
        assert len(by_unit) == UNITS
        assert all(c["success"] == 1 or (c["success"] == 0 and c["unverified"])
                   for c in by_unit.values()), by_unit
        assert Counter(stops.values())["success"] >= UNITS - 4
        assert cassette.check_hashes() == []
        streams = cassette.streams()
        assert len({s.name for s in streams}) == len(streams)
        measured = {s.run_uid for s in streams}
        assert {u for u, r in runs.items() if r["status"] == "success"} <= measured
        for stream in streams:
            assert stream.sha256 is not None  # sealed, the killed attempt's too
            t, values = cassette.read(stream)
            t0, v0 = store.samples(stream.run_uid, stream.source, phase_uid=stream.phase_uid)
            assert np.array_equal(t, t0) and np.array_equal(values, v0)
    audit = hilbench("replay", folder, "--analysis-only", timeout=120)
    assert audit.returncode == 0, audit.stderr
    assert "all equal to the recorded ones" in audit.stdout
    # The first attempt's channels are kept aside; a replay with stand-ins says why it cannot.
    assert (folder / "channels-until-restart-1" / "clock.f8").is_file()
    assert not (folder / "channels").exists()
    full = hilbench("replay", folder, timeout=120)
    assert full.returncode == 2
    assert "continued after its daemon stopped" in full.stderr and "--analysis-only" in full.stderr


@pytest.mark.slow
def test_an_item_the_daemon_ran_whole_replays_with_stand_ins(tmp_path, daemon_at):
    db, folder = tmp_path / "d.sqlite", tmp_path / "cassette"
    path = campaign_file(tmp_path, "whole", 6, timeout_s=0.02)
    assert hilbench_here("queue", "add", path, "--db", db, "--record", folder).returncode == 0
    d = daemon_at(db).start()
    d.wait_until(lambda s: history(db) and s["daemon"]["state"] == "idle", "the item finished")
    assert history(db)[0]["exit_status"] == "completed"
    replay = hilbench("replay", folder, timeout=180)
    assert replay.returncode == 0, replay.stdout[-2000:] + replay.stderr[-2000:]


@pytest.mark.slow
def test_queue_add_refuses_a_record_folder_that_holds_files(tmp_path):
    full = tmp_path / "full"
    full.mkdir()
    (full / "mine.txt").write_text("keep")
    path = campaign_file(tmp_path, "c", 4)
    done = hilbench_here("queue", "add", path, "--db", tmp_path / "d.sqlite", "--record", full)
    assert done.returncode == 2 and "is not empty" in done.stderr
    assert (full / "mine.txt").read_text() == "keep"
    assert hilbench_here("queue", "list", "--db", tmp_path / "d.sqlite", "--json").stdout.strip() \
        in ("[]", "")


def test_a_cassette_goes_on_only_for_its_owner_and_drops_a_line_cut_by_a_kill(tmp_path):
    from hilbench.cassette.recorder import CassetteRecorder
    from hilbench.documents import Event, Samples

    campaign = campaign_file(tmp_path, "c", 4)
    folder = tmp_path / "cassette"

    def recorder(owner: str | None) -> CassetteRecorder:
        return CassetteRecorder(folder, campaign, content=campaign.read_bytes(), owner=owner)

    first = recorder("item 1")
    first(Event("r1", None, "before", 1.0, {}))
    first(Samples("r1", "p1", "dmm", "W", np.arange(3.0), np.ones(3)))  # never sealed: killed
    with open(folder / "documents.jsonl", "a") as fh:
        fh.write('{"kind": "event", "run_uid": "r1", "na')  # the kill, mid-line
    for stranger in (None, "item 2"):
        with pytest.raises(FileExistsError, match="not empty"):
            recorder(stranger)
    again = recorder("item 1")
    again(Event("r2", None, "after", 2.0, {}))
    again(Samples("r2", "p2", "dmm", "W", np.arange(2.0), np.ones(2)))
    again.close()
    cassette = Cassette(folder)
    assert [d["name"] for d in cassette.documents()] == ["before", "after"]
    streams = {s.run_uid: s for s in cassette.streams()}
    assert streams["r1"].sha256 is None and streams["r2"].samples == 2
    assert len(cassette.read(streams["r1"])[0]) == 3  # the stop's stream kept as it was
