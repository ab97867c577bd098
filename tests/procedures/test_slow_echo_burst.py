"""An agent that slows its echoes no longer decides how late a reply may be before it is
inconsistent (a failed run) rather than unverified (tried again): after a late reply the
orchestrator takes a burst of the agent's echoes to see how loaded the link is, and a limit of
10 × the slowest of them; the agent serves those echoes, so its burst is held to one of the
orchestrator's reference responder taken beside it (link_probe.held_burst), as its bound is.

The spec agent (tests/spec_agent.py) holds each echo 0.3 s and replies 2.5 s past its 10 ms
timeout claiming the timeout: its own burst lifted the limit to 3 s, so the run was only
unverified. Held, the limit stays under 2.5 s while the reference's slowest echo of the burst
is under 50 ms, as on a loaded host (a 10 ms stall is common, one of 24 ms rare). The
reference's burst is recorded in the cassette beside its bounds, and the replay hands it back:
the same verdict."""

from __future__ import annotations

import pytest

from hilbench.cassette.channels import CHANNELS, SPAWNED
from hilbench.cassette.replay import replay_cassette
from hilbench.store import Store
from hilbench.wire.link_probe import REFERENCE_FACTOR, held_burst
from tests.procedures.test_qubo_timing import spec_agent, spec_campaign
from tests.subprocesses import hilbench, run_campaign


def test_a_burst_counts_up_to_the_factor_times_the_references_plus_the_budget():
    assert held_burst(0.150, 0.0005) == pytest.approx(REFERENCE_FACTOR * 0.0005)
    assert held_burst(0.150, 0.0005, budget_s=0.010) == pytest.approx(0.0125)
    assert held_burst(0.001, 0.0005) == 0.001  # within: the agent's own
    assert held_burst(0.150, None) == 0.150  # a replay recorded before reference bursts


@pytest.mark.slow
def test_slowed_echoes_do_not_turn_a_reply_far_past_its_bound_into_a_retry(tmp_path):
    db, folder = tmp_path / "burst.sqlite", tmp_path / "cassette"
    with spec_agent("1:lag:2.5", echo_delay_s=0.3) as endpoint:
        path = spec_campaign(tmp_path, endpoint, [1], "burst", timeout_s=0.01, timing_attempts=1)
        done = run_campaign(path, db, "--record", str(folder))
    assert "Traceback" not in done.stderr, done.stderr
    with Store(db) as store:
        runs = store.runs()
    assert [r["status"] for r in runs] == ["fail"], [(r["status"], r["reason"]) for r in runs]
    reason = runs[0]["reason"]
    assert "timing_inconsistent" in reason and "more than a loaded host explains" in reason, \
        reason
    helpers = (folder / CHANNELS / SPAWNED).read_text()
    assert '"kind": "reference_burst"' in helpers, helpers
    outcome = replay_cassette(folder)  # the stand-in's late reply, and the recorded burst
    assert outcome.runs == 1 and outcome.differences == [], outcome.differences
    # a burst edited in the cassette is said by name, as a bound is, not dropped
    spawned = folder / CHANNELS / SPAWNED
    spawned.write_text(helpers.replace('"kind": "reference_burst", "slowest_s": ',
                                       '"kind": "reference_burst", "slowest_s": -'))
    replayed = hilbench("replay", folder, timeout=120)
    assert replayed.returncode != 0 and "Traceback" not in replayed.stderr, replayed.stderr
    assert "a reference burst cannot be read" in replayed.stdout + replayed.stderr, (
        replayed.stdout + replayed.stderr)
