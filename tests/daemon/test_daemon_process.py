"""The daemon as a process: queue, exclusivity, SIGKILL and SIGTERM, pause, status."""

from __future__ import annotations

import signal
import time
from collections import Counter

import pytest

from hilbench.daemon.queue_db import QueueDB
from hilbench.store import Store
from tests.campaign_toml import agent, campaign, keysight, qubo, write_campaign
from tests.daemon.conftest import history, qubo_campaign
from tests.subprocesses import (
    hilbench,
    hilbench_here,
    start_campaign,
    stop,
    unit_runs,
    units_of,
    wait_for_run,
)

pytestmark = pytest.mark.slow

BUSY_UNITS = 400


def _runs(db):
    with Store(db) as store:
        return unit_runs(store)


def test_queued_campaigns_run_in_order_and_reach_the_history(tmp_path, daemon_at):
    db = tmp_path / "d.sqlite"
    first = qubo_campaign(tmp_path, "first", 3)
    second = qubo_campaign(tmp_path, "second", 2)
    assert hilbench_here("queue", "add", first, "--db", db).returncode == 0
    assert hilbench_here("queue", "add", second, "--db", db, "--priority", "1").returncode == 0
    assert hilbench_here("queue", "add", first, "--db", db).returncode == 0  # the same file again
    d = daemon_at(db).start()
    d.wait_until(lambda s: len(history(db)) == 3 and s["daemon"]["state"] == "idle",
                 "every item done")
    rows = history(db)
    # newest first: the higher priority ran first, then the two items of one file in order
    assert [(r["id"], r["name"]) for r in rows] == [(3, "first"), (1, "first"), (2, "second")]
    assert all(r["exit_status"] == "completed" for r in rows)
    assert [units_of(db, r["run_uids"]) for r in rows] == [3, 3, 2]
    assert [r["starts"] for r in rows] == [1, 1, 1]
    # queued again, a finished campaign runs again as a new campaign
    assert rows[0]["campaign_uid"] != rows[1]["campaign_uid"]
    assert all(r["started_at"] <= r["stopped_at"] for r in rows)


def test_sigkill_mid_campaign_then_restart_runs_every_unit_exactly_once(tmp_path, daemon_at):
    db = tmp_path / "d.sqlite"
    path = qubo_campaign(tmp_path, "long", 40, timeout_s=0.02)
    assert hilbench_here("queue", "add", path, "--db", db).returncode == 0
    d = daemon_at(db).start()
    d.wait_until(lambda s: (s["current"] or {}).get("done", 0) >= 5, "five units done")
    assert d.signal(signal.SIGKILL) == -signal.SIGKILL
    d.start()
    d.wait_until(lambda s: history(db) and s["daemon"]["state"] == "idle", "the item finished")
    [row] = history(db)
    assert row["exit_status"] == "completed", row
    assert row["starts"] == 2  # before the kill and after
    runs = _runs(db)
    done = Counter(r["unit_key"] for r in runs if r["status"] == "success")
    assert len(done) == 40 and set(done.values()) == {1}  # every unit, none twice
    # the run the kill cut short is closed with the reason, not left open
    assert all(r["status"] in ("success", "abort") for r in runs)
    assert hilbench_here("queue", "list", "--db", db, "--json").stdout.strip() == "[]"


@pytest.mark.parametrize(("sig", "other"), [(signal.SIGTERM, "SIGINT"),
                                           (signal.SIGINT, "SIGTERM")])
def test_a_stop_signal_aborts_the_run_naming_it_and_the_restart_resumes(
        tmp_path, daemon_at, sig, other):
    db = tmp_path / "d.sqlite"
    # One unit of 1.5 s and two of 1 ms: SA burns its timeout in CPU, and only the unit the
    # signal lands in needs to be long
    sweep = qubo(nodes=[10], seeds=[0], solvers=["sa"], timeouts_s=[1.5, 0.001, 0.002])
    path = write_campaign(tmp_path, campaign(agent(), sweep, name="term"), "term.toml")
    assert hilbench_here("queue", "add", path, "--db", db).returncode == 0
    d = daemon_at(db).start()
    # The signal lands while the long unit solves: the status seen can be a few tenths of a
    # second old, and a 20 ms unit had often ended by then (no run in progress to abort).
    d.wait_until(lambda s: "timeout=1.5/" in ((s["current"] or {}).get("unit") or ""),
                 "the long unit running")
    assert d.signal(sig) == 128 + sig
    aborted = [r for r in _runs(db) if r["status"] == "abort"]
    assert aborted and all(f"interrupted by {sig.name}" in r["reason"] for r in aborted)
    assert not any(other in r["reason"] for r in aborted)
    d.start()
    d.wait_until(lambda s: history(db), "the item finished")
    assert history(db)[0]["exit_status"] == "completed"
    assert history(db)[0]["starts"] == 2
    done = Counter(r["unit_key"] for r in _runs(db) if r["status"] == "success")
    assert len(done) == 3 and set(done.values()) == {1}


def _queued(db):
    """The queue's items, if each is queued (none running)."""
    with QueueDB(db) as queue:
        items = queue.items()
    return items if all(i.state == "queued" for i in items) else []


def test_a_hand_run_is_refused_while_the_daemon_holds_the_bench_and_vice_versa(
        tmp_path, daemon_at):
    db = tmp_path / "d.sqlite"
    # 400 units of 1 ms (~40 ms of wall each, more under load, for ~12 ms of CPU): still
    # running after a refused `hilbench run` and two more hilbench commands start up on a loaded
    # machine (at 0.02 s a 60-unit campaign had ended first; 60 of 0.1 s had ended before
    # `queue pause --now` under a load of 10 on 2 cores; 120 of 0.1 s cost SA 12 s of CPU)
    busy = qubo_campaign(tmp_path, "busy", BUSY_UNITS, timeout_s=0.001)
    other = qubo_campaign(tmp_path, "other", 2)
    assert hilbench_here("queue", "add", busy, "--db", db).returncode == 0
    config = tmp_path / "daemon.toml"
    config.write_text("[daemon]\nbusy_delay_s = 1\n")
    d = daemon_at(db, config=config).start()
    d.wait_until(lambda s: (s["current"] or {}).get("done", 0) >= 1, "the daemon's campaign runs")
    refused = hilbench("run", other, "--db", tmp_path / "hand.sqlite", "-q")
    assert refused.returncode == 2, refused.stderr
    assert "in use by pid" in refused.stderr and "campaign busy" in refused.stderr
    assert hilbench_here("queue", "pause", "--now", "--db", db).returncode == 0
    d.wait_until(lambda s: s["daemon"]["state"] == "paused" and not s["current"]
                 and _queued(db), "paused")
    # The abort was asked for: the item is back in its place at once, no start counted against
    # its retries (a worker whose report was lost had it filed as a crash, retry_delay_s away).
    [item] = _queued(db)
    assert item.outcome == "interrupted by a signal" and item.not_before == 0, item
    assert item.attempts == 0 and "paused: " in item.message, item
    # the other way round: a hand run holds the bench, the daemon waits and says why (its
    # output to a file: a pipe nobody reads fills, and the run then blocks, SIGTERM or not)
    with open(tmp_path / "hand.out", "w") as out:
        hand = start_campaign(qubo_campaign(tmp_path, "hand", 600, timeout_s=0.001),
                              tmp_path / "hand.sqlite", stdout=out, stderr=out)
    try:
        wait_for_run(tmp_path / "hand.sqlite", hand, status=None)
        assert hilbench_here("queue", "resume", "--db", db).returncode == 0
        status = d.wait_until(lambda s: "in use by pid" in s["last_error"], "the daemon waits")
        assert f"pid {hand.pid}" in status["last_error"]
    finally:
        stop(hand)
    d.wait_until(lambda s: history(db), "the daemon's campaign finished after the hand run")
    # every unit ended once: a success once, or unverified (a loaded host) after its attempts
    runs = _runs(db)
    done = Counter(r["unit_key"] for r in runs if r["status"] == "success")
    ended = {r["unit_key"] for r in runs if r["status"] in ("success", "unverified")}
    assert len(ended) == BUSY_UNITS and set(done.values()) <= {1}


def test_pause_after_the_unit_then_resume_loses_and_repeats_nothing(tmp_path, daemon_at):
    db = tmp_path / "d.sqlite"
    path = qubo_campaign(tmp_path, "pausing", 30, timeout_s=0.02)
    assert hilbench_here("queue", "add", path, "--db", db).returncode == 0
    d = daemon_at(db).start()
    d.wait_until(lambda s: (s["current"] or {}).get("done", 0) >= 3, "three units done")
    assert hilbench_here("queue", "pause", "--db", db).returncode == 0
    d.wait_until(lambda s: s["daemon"]["state"] == "paused" and not s["current"], "paused")
    runs = _runs(db)
    assert runs and all(r["status"] == "success" for r in runs)  # stopped between units
    assert hilbench_here("queue", "resume", "--db", db).returncode == 0
    d.wait_until(lambda s: history(db), "finished")
    done = Counter(r["unit_key"] for r in _runs(db) if r["status"] == "success")
    assert len(done) == 30 and set(done.values()) == {1}
    assert all(r["status"] == "success" for r in _runs(db))


def test_status_shows_progress_eta_agent_health_and_queue(tmp_path, daemon_at):
    db = tmp_path / "d.sqlite"
    meter = keysight(simulate="simulated-cpu", noise_std_w=0.01,
                     settings={"range": 10.0, "nplc": 0.02, "autozero": False,
                               "sample_interval_s": 0.001})
    sweep = qubo(nodes=[10], seeds=list(range(100)), solvers=["sa"], timeouts_s=[0.02])
    path = write_campaign(tmp_path, campaign(agent(), sweep, meter, name="watched"), "w.toml")
    later = qubo_campaign(tmp_path, "later", 1)
    assert hilbench_here("queue", "add", path, "--db", db).returncode == 0
    assert hilbench_here("queue", "add", later, "--db", db).returncode == 0
    d = daemon_at(db).start()
    s = d.wait_until(lambda s: (s["current"] or {}).get("done", 0) >= 5 and s["agents"]
                     and s["agents"][0]["clock_offset_s"] is not None
                     and s["instruments"] and s["instruments"][0]["last_reading"],
                     "progress and health")
    assert s["daemon"]["state"] == "running"
    c = s["current"]
    assert c["name"] == "watched" and c["total"] == 100
    assert c["eta_s"] is not None and c["eta_s"] > 0 and "same unit shape" in c["eta_basis"]
    a = s["agents"][0]
    assert a["id"] == "cpu0" and a["driver"] == "cpu" and a["host"]
    assert a["last_heard_s_ago"] < 5 and a["clock_offset_uncertainty_s"] >= 0
    assert [i["name"] for i in s["queue"]["head"]] == ["watched", "later"]
    text = hilbench_here("status", "--db", db)
    assert "campaign: watched" in text.stdout and "ETA based on" in text.stdout
    assert "agent cpu0: cpu on" in text.stdout
    [i] = s["instruments"]
    assert i["id"] == "dmm" and "34465A" in i["identity"] and i["simulated"]
    assert time.time() - i["last_reading"] < 10
    assert "instrument dmm: Keysight 34465A" in text.stdout and "last reading" in text.stdout
