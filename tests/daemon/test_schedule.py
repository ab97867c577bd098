"""Cron schedules on an injected clock: daylight-saving changes, fires missed while the daemon
was down (per policy), coalescing while the previous item is still queued."""

from __future__ import annotations

from datetime import datetime
from zoneinfo import ZoneInfo

import pytest

from hilbench.daemon.config import DaemonConfig
from hilbench.daemon.manager import Daemon
from hilbench.daemon.queue_db import QueueDB
from hilbench.daemon.schedule import ScheduleError, check, plan
from tests.daemon.conftest import qubo_campaign

BERLIN = ZoneInfo("Europe/Berlin")


def t(*args: int) -> float:
    return datetime(*args, tzinfo=BERLIN).timestamp()


def local(ts: float) -> str:
    return datetime.fromtimestamp(ts, BERLIN).strftime("%m-%d %H:%M %Z")


def run_clock(cron: str, start: float, end: float, step_s: float = 60.0) -> list[float]:
    """Fires queued by a daemon that runs from ``start`` to ``end``, ticking every ``step_s``."""
    last, queued, now = start, [], start
    while now <= end:
        p = plan(cron, "Europe/Berlin", "skip", last, now, daemon_started=start)
        if p is not None:
            queued += [f for f, outcome, _ in p.fires if outcome == "queued"]
            last = p.last_fire
        now += step_s
    return queued


def test_spring_forward_fires_once_at_the_first_valid_time():
    # 2026-03-29 02:00 CET jumps to 03:00 CEST: 02:30 does not exist that night
    fires = run_clock("30 2 * * *", t(2026, 3, 28, 12), t(2026, 3, 30, 12))
    assert [local(f) for f in fires] == ["03-29 03:00 CEST", "03-30 02:30 CEST"]


def test_fall_back_fires_a_daily_job_once_in_the_repeated_hour():
    # 2026-10-25 03:00 CEST goes back to 02:00 CET: 02:30 happens twice, the job runs once
    fires = run_clock("30 2 * * *", t(2026, 10, 24, 12), t(2026, 10, 26, 12))
    assert [local(f) for f in fires] == ["10-25 02:30 CEST", "10-26 02:30 CET"]


@pytest.mark.parametrize(("policy", "queued"), [("skip", 0), ("run-once", 1)])
def test_fires_missed_over_a_dst_change_follow_the_policy(policy, queued):
    # the daemon was down from Saturday noon to Monday noon, over the autumn change
    down, up = t(2026, 10, 24, 12), t(2026, 10, 26, 12)
    p = plan("30 2 * * *", "Europe/Berlin", policy, down, up, daemon_started=up)
    assert p is not None
    assert [local(f) for f, _, _ in p.fires] == ["10-25 02:30 CEST", "10-26 02:30 CET"]
    assert sum(o == "queued" for _, o, _ in p.fires) == queued
    assert p.queue_item is bool(queued)
    assert all(o == "missed" and "not running" in n for _, o, n in p.fires if o != "queued")
    assert p.last_fire == t(2026, 10, 26, 2, 30)
    # the next tick finds nothing left: a fire is handled once
    assert plan("30 2 * * *", "Europe/Berlin", policy, p.last_fire, up + 1, up) is None


def test_spring_fire_missed_while_down_runs_once_under_run_once():
    down, up = t(2026, 3, 28, 23), t(2026, 3, 29, 9)
    p = plan("30 2 * * *", "Europe/Berlin", "run-once", down, up, daemon_started=up)
    assert p is not None and [(local(f), o) for f, o, _ in p.fires] == [
        ("03-29 03:00 CEST", "queued")]


def test_bad_cron_zone_and_policy_are_refused_with_the_reason():
    with pytest.raises(ScheduleError, match="cron expression"):
        check("61 * * * *", "UTC", "skip")
    with pytest.raises(ScheduleError, match="unknown time zone 'Mars/Base'"):
        check("* * * * *", "Mars/Base", "skip")
    with pytest.raises(ScheduleError, match="--missed"):
        check("* * * * *", "UTC", "sometimes")


def test_the_daemon_on_an_injected_clock_queues_then_coalesces_while_the_item_waits(tmp_path):
    db = tmp_path / "s.sqlite"
    start = t(2026, 6, 1, 21, 59, 30)
    clock = [start]
    daemon = Daemon(DaemonConfig(), db, clock=lambda: clock[0])
    try:
        with QueueDB(db) as q:
            path = qubo_campaign(tmp_path, "nightly", 1)  # valid: the fire gate passes it
            sid = q.add_schedule(name="nightly", source_path=str(path),
                                 content=path.read_text(),
                                 cron="* * * * *", tz="Europe/Berlin", missed="skip",
                                 trials=None, record=None,
                                 priority=0, now=start)
        for step in range(0, 200):  # 21:59:30 .. 22:02:50, a tick every second
            clock[0] = start + step
            daemon._tick_schedules(clock[0])
        with QueueDB(db) as q:
            fires = sorted(q.fires(sid), key=lambda f: f["fire_time"])
            items = q.items()
    finally:
        daemon.control.close()
    assert [(local(f["fire_time"]), f["outcome"]) for f in fires] == [
        ("06-01 22:00 CEST", "queued"),
        ("06-01 22:01 CEST", "coalesced"),
        ("06-01 22:02 CEST", "coalesced"),
    ]
    assert all(f["handled_at"] for f in fires)
    assert len(items) == 1 and items[0].schedule_id == sid and items[0].name == "nightly"
    assert "still queued or running" in fires[1]["note"]
