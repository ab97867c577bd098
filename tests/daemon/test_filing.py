"""What `queue history` says of an item: what its campaign's runs ended as over every start."""

from __future__ import annotations

from hilbench.daemon.filing import history_message
from hilbench.orchestrator.session import Outcome, SessionOutcome


def test_a_campaign_finished_over_two_starts_says_what_ran_not_the_last_starts_counts():
    # the last start found both units done by the first: its own counts are "0 completed"
    ended = SessionOutcome(Outcome.COMPLETED, "", "c1", completed=0, skipped=2)
    assert "0 run(s) completed, 2 resumed" in ended.counts()
    assert history_message(ended, {"success": 2}) == "2 run(s): 2 completed"
    failed = SessionOutcome(Outcome.FAILED_RUNS, "", "c1", completed=1, failed=1,
                            first_failure="run 1a2b: timeout")
    assert history_message(failed, {"success": 1, "fail": 1, "abort": 1, "unverified": 2}) == (
        "5 run(s): 1 completed, 1 failed, 2 unverified, 1 aborted and run again; "
        "first failure: run 1a2b: timeout")
    # an end that is not the campaign's keeps its own reason
    refused = SessionOutcome(Outcome.STORE_ERROR, "the store is read-only", "c1")
    assert history_message(refused, {"success": 1}) == "the store is read-only"
