"""The one table by which the daemon files a worker's outcome: the item's next state, whether
it is tried again and when, and what `status`, `queue list` and `queue history` say.

The worker reports a :class:`~hilbench.orchestrator.session.SessionOutcome`, the same one
`hilbench run` turns into its exit code; the daemon looks it up here. A worker that ended
without a report (killed, crashed) is :attr:`Outcome.CRASHED`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from hilbench.orchestrator.session import Outcome, SessionOutcome

Action = Literal["close", "requeue", "wait", "retry"]


@dataclass(frozen=True)
class Filing:
    """``close``: to the history as ``status``. ``requeue``: back at its place at once.
    ``wait``: back at its place after ``delay`` (a config key), the start not counted against
    ``retries``. ``retry``: the same, counted unless a unit finished this start."""

    action: Action
    status: Literal["completed", "failed"] | None = None
    delay: Literal["busy_delay_s", "retry_delay_s"] | None = None
    event: str | None = None  # the notification sent
    says: str = ""  # put before the message in `status`, `queue list` and history


FILING: dict[Outcome, Filing] = {
    Outcome.COMPLETED: Filing("close", "completed", event="campaign.finished"),
    Outcome.NOTHING_TO_DO: Filing("close", "completed", event="campaign.finished"),
    Outcome.FAILED_RUNS: Filing("close", "failed", event="campaign.failed"),
    Outcome.INVALID_CAMPAIGN: Filing("close", "failed", event="campaign.failed",
                                     says="refused: "),
    Outcome.STORE_ERROR: Filing("close", "failed", event="campaign.failed"),
    Outcome.INTERNAL: Filing("close", "failed", event="campaign.failed"),
    Outcome.PAUSED: Filing("requeue", says="paused: "),
    Outcome.INTERRUPTED: Filing("requeue", event="campaign.aborted", says="paused: "),
    Outcome.BENCH_BUSY: Filing("wait", delay="busy_delay_s"),
    Outcome.STORE_UNWRITABLE: Filing(
        "wait", delay="retry_delay_s", event="campaign.aborted",
        says="waiting for the store to be writable (resumes on its own, or at once on "
             "`hilbench queue resume` or a daemon restart): "),
    Outcome.AGENT_LOST: Filing("retry", delay="retry_delay_s", event="agent.lost"),
    Outcome.INSTRUMENT_LOST: Filing("retry", delay="retry_delay_s", event="instrument.lost"),
    Outcome.CRASHED: Filing("retry", delay="retry_delay_s"),
}


def outcome_of_end(end: SessionOutcome | None, code: int, stopped_by_daemon: bool
                   ) -> SessionOutcome:
    """The outcome a worker's end is filed as: its report; without one, a crash. A signal the
    daemon did not send (someone killed the worker) is filed as a crash: tried again."""
    if end is None:
        return SessionOutcome(Outcome.CRASHED, f"worker exited with code {code} and no report")
    if end.outcome is Outcome.INTERRUPTED and not stopped_by_daemon:
        return SessionOutcome(Outcome.CRASHED, end.message, end.campaign_uid)
    return end


_RAN = (Outcome.COMPLETED, Outcome.FAILED_RUNS, Outcome.NOTHING_TO_DO)
_SAID = (("success", "completed"), ("fail", "failed"), ("unverified", "unverified"),
         ("abort", "aborted and run again"), ("incomplete", "left unfinished"))


def campaign_counts(counts: dict[str, int]) -> str:
    """What a campaign's runs ended as, over all its starts (``counts``: runs by exit status,
    'incomplete' for none), e.g. ``2 run(s): 2 completed``."""
    parts = [f"{counts[key]} {said}" for key, said in _SAID if counts.get(key)]
    return f"{sum(counts.values())} run(s): {', '.join(parts) or 'none'}"


def history_message(ended: SessionOutcome, runs: dict[str, int] | None = None) -> str:
    """What the history keeps as the item's message: for a campaign that ran to its end, what
    its runs ended as over every start (``runs``, by exit status) — not the last start's
    "0 completed, 2 resumed" —, else the session's message; for failed runs the first
    failure's reason (not only "12 failed")."""
    if runs is not None and ended.outcome in _RAN:
        message = campaign_counts(runs)
    else:
        message = ended.message or ended.counts()
    if ended.outcome is Outcome.FAILED_RUNS and ended.first_failure:
        message += f"; first failure: {ended.first_failure}"
    return message
