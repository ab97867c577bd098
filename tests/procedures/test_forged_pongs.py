"""An agent that forges its clock probes' answers (tests/spec_agent.py ``--pong-skew``: each
pong's ``t3`` put before its ``t2``) no longer widens the clock offset's uncertainty, which every
timing check allows: with a hold of −1 s it was ± 0.5 s, and a reply 0.24 s late claiming its
10 ms timeout passed as an on-time answer. The probe is held to the orchestrator's own round
trip, and the run fails as ``timing_inconsistent``, naming the pong."""

from __future__ import annotations

import pytest

from hilbench.store import Store
from tests.procedures.test_qubo_timing import spec_agent, spec_campaign
from tests.subprocesses import run_campaign


@pytest.mark.slow
def test_a_pong_sent_before_its_ping_arrived_fails_the_run_by_name(tmp_path):
    db = tmp_path / "pong.sqlite"
    with spec_agent("1:lag:0.24", pong_skew_s=1.0) as endpoint:
        path = spec_campaign(tmp_path, endpoint, [1], "pong", timeout_s=0.01, timing_attempts=1)
        done = run_campaign(path, db)
    assert "Traceback" not in done.stderr, done.stderr
    with Store(db) as store:
        runs = store.runs()
    assert [r["status"] for r in runs] == ["fail"], [(r["status"], r["reason"]) for r in runs]
    reason = runs[0]["reason"]
    assert "timing_inconsistent" in reason and "clock probe" in reason, reason
    assert "before its ping arrived" in reason, reason
