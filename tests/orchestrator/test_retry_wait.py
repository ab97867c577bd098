"""A unit whose timing could not be verified twice in a row is run again only after a wait that
doubles, so its attempts outlast a spell of load on the host instead of all falling inside it;
the wait says so in the log and answers Ctrl-C at once."""

from __future__ import annotations

import itertools
import signal
import time

import pytest

from hilbench.orchestrator.retry_wait import MAX_WAIT_S, retry_wait_s
from hilbench.store import Store
from tests.procedures.test_qubo_timing import spec_agent, spec_campaign
from tests.subprocesses import run_campaign, start_campaign

pytestmark = pytest.mark.timeout(120)


def test_the_wait_doubles_from_the_first_and_stops_at_its_cap():
    assert [retry_wait_s(1.0, done) for done in range(9)] == [0, 0, 1, 2, 4, 8, 16, MAX_WAIT_S,
                                                              MAX_WAIT_S]
    assert retry_wait_s(0.0, 3) == 0.0  # 0: attempts back to back


def test_each_further_attempt_waits_twice_as_long_and_says_so(tmp_path):
    """Seed 1 replies 10× late claiming the requested time: unverified at every attempt. The
    second attempt follows at once (one late reply is common on a busy host), the third after
    the first wait, the fourth after twice that."""
    db = tmp_path / "w.sqlite"
    with spec_agent("1:forged:10") as endpoint:
        path = spec_campaign(tmp_path, endpoint, [1], "paced", timing_attempts=4,
                             timing_retry_wait_s=0.5)
        done = run_campaign(path, db)
    assert done.returncode == 0, done.stdout + done.stderr
    with Store(db) as store:
        runs = sorted(store.runs(), key=lambda r: r["t_start"])
    assert [r["status"] for r in runs] == ["unverified"] * 4
    gaps = [b["t_start"] - a["t_stop"] for a, b in itertools.pairwise(runs)]
    assert gaps[1] >= 0.5 and gaps[2] >= 1.0, gaps  # the second attempt: no wait (below)
    assert gaps[2] < 1.0 + 5.0, gaps  # a wait, not a stall
    log = done.stderr + done.stdout
    assert "trying again in 0.5 s (attempt 3 of 4)" in log, log
    assert "trying again in 1 s (attempt 4 of 4)" in log, log
    assert log.count("trying again in") == 2, log


def test_ctrl_c_during_the_wait_stops_the_campaign_at_once(tmp_path):
    db = tmp_path / "c.sqlite"
    with spec_agent("1:forged:10") as endpoint:
        path = spec_campaign(tmp_path, endpoint, [1], "stopped", timing_attempts=3,
                             timing_retry_wait_s=MAX_WAIT_S)
        proc = start_campaign(path, db)
        try:
            deadline = time.monotonic() + 60
            while _statuses(db).count("unverified") < 2 and time.monotonic() < deadline:
                time.sleep(0.1)  # two attempts end unverified, then the 30 s wait
            assert _statuses(db) == ["unverified"] * 2, proc.poll()
            time.sleep(0.5)
            sent = time.monotonic()
            proc.send_signal(signal.SIGINT)
            out, err = proc.communicate(timeout=30)
            took = time.monotonic() - sent
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    assert proc.returncode == 130, out + err
    assert took < 10, took  # the wait answered the signal, not its 30 s end
    assert "Traceback" not in err
    assert _statuses(db) == ["unverified"] * 2  # nothing lost, no half-written run


def _statuses(db) -> list[str]:
    if not db.exists():
        return []
    try:
        with Store(db) as store:
            return [r["status"] for r in store.runs()]
    except Exception:  # the store is being created
        return []
