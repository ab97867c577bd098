"""A full disk under the daemon: the item waits (not failed), says why in `status` and `queue
list`, and once space is back and the daemon restarts it resumes, every unit exactly once —
as `hilbench run` does (tests/orchestrator/test_storage_faults.py). The disk is a real 2 MiB
tmpfs; the daemon, its worker and the campaign are real processes."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from hilbench.store import Store
from tests.daemon.conftest import history, qubo_campaign
from tests.disks import remount, small_tmpfs
from tests.subprocesses import hilbench_here, unit_runs

pytestmark = pytest.mark.slow

UNITS = 40  # 1 ms SA units: a 2 MiB store fills after a few


def test_a_full_disk_makes_the_item_wait_and_a_restart_resumes_every_unit_once(
        tmp_path, daemon_at):
    with small_tmpfs(tmp_path / "disk") as disk:
        db = disk / "d.sqlite"
        path = qubo_campaign(tmp_path, "full", UNITS, timeout_s=0.001)
        assert hilbench_here("queue", "add", path, "--db", db).returncode == 0
        config = tmp_path / "daemon.toml"
        config.write_text("[daemon]\nretry_delay_s = 3600\n")  # only a restart resumes it
        d = daemon_at(db, config=config).start()
        status = d.wait_until(lambda s: "store to be writable" in s["daemon"]["detail"],
                              "the item waits for the disk")
        assert "disk is full" in status["daemon"]["detail"], status["daemon"]
        assert "disk is full" in status["last_error"]
        assert history(db) == []  # not failed for good
        # Whether the daemon could write the item's wait into the store's full disk depends on
        # the pages the failed write freed: either the item waits 'queued', saying why, or it
        # stays 'running' (resumed first by a restarted daemon) and the daemon says why.
        listed = hilbench_here("queue", "list", "--db", db).stdout
        [item] = json.loads(hilbench_here("queue", "list", "--db", db, "--json").stdout)
        if item["state"] == "queued":
            assert item["outcome"] == "store unwritable" and item["attempts"] == 0, item
            assert "(store unwritable: waiting for the store to be writable" in listed, listed
        else:
            assert item["state"] == "running" and item["campaign_uid"], item
            assert "(daemon: waiting for the store to be writable" in listed, listed
        assert "disk is full" in listed
        with Store(db) as store:
            before = [r for r in unit_runs(store) if r["status"] == "success"]
        assert 0 < len(before) < UNITS
        d.stop()

        remount(disk, "size=32m")  # space returns
        d.start()
        d.wait_until(lambda s: history(db) and s["daemon"]["state"] == "idle",
                     "the item finished after the restart")
        [row] = history(db)
        assert row["exit_status"] == "completed", row
        assert row["outcome"] == "completed"
        with Store(db) as store:
            runs = unit_runs(store)
        done = Counter(r["unit_key"] for r in runs if r["status"] == "success")
        assert len(done) == UNITS and set(done.values()) == {1}  # every unit, none twice
        assert {r["uid"] for r in before} <= {r["uid"] for r in runs if r["status"] == "success"}
        # the run the full disk cut short is closed with the reason, not left open
        assert all(r["status"] in ("success", "abort") for r in runs), runs
        d.stop()
