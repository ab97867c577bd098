"""One session runner: run a campaign and say how it ended, as one typed outcome.

`hilbench run`, `hilbench demo` and the daemon's worker all run a campaign through
:func:`run_session`. Every way a campaign can end is one :class:`Outcome` with its exit code
and whether the same campaign resumes (:data:`OUTCOMES`), so a full disk is "store
unwritable, exit 4, resumable" wherever it happens, and the daemon files each outcome by one
table (:mod:`hilbench.daemon.filing`) instead of guessing from exit codes.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

if TYPE_CHECKING:  # the daemon files outcomes without loading the campaign model
    from hilbench.orchestrator.campaign import Campaign


class Outcome(enum.Enum):
    """How a campaign session ended (the value is what status and history show)."""

    COMPLETED = "completed"
    FAILED_RUNS = "completed with failed runs"
    NOTHING_TO_DO = "nothing to do"
    INTERRUPTED = "interrupted by a signal"
    PAUSED = "paused"
    BENCH_BUSY = "bench busy"
    STORE_UNWRITABLE = "store unwritable"  # disk full, I/O error, read-only
    AGENT_LOST = "agent unreachable or lost"
    INSTRUMENT_LOST = "instrument unreachable or lost"
    INVALID_CAMPAIGN = "invalid campaign"
    STORE_ERROR = "store refused"
    CRASHED = "worker ended without a report"
    INTERNAL = "internal error"


@dataclass(frozen=True)
class OutcomeRule:
    exit_code: int  # INTERRUPTED: 128 + the signal, given per session
    resumable: bool  # the same command (or the daemon) goes on where it stopped


EXIT_PAUSED = 10
EXIT_INTERNAL = 70

OUTCOMES: dict[Outcome, OutcomeRule] = {
    Outcome.COMPLETED: OutcomeRule(0, False),
    Outcome.FAILED_RUNS: OutcomeRule(1, False),
    Outcome.NOTHING_TO_DO: OutcomeRule(0, False),
    Outcome.INTERRUPTED: OutcomeRule(130, True),
    Outcome.PAUSED: OutcomeRule(EXIT_PAUSED, True),
    Outcome.BENCH_BUSY: OutcomeRule(2, False),  # nothing started: nothing to resume
    Outcome.STORE_UNWRITABLE: OutcomeRule(4, True),
    Outcome.AGENT_LOST: OutcomeRule(3, True),
    Outcome.INSTRUMENT_LOST: OutcomeRule(3, True),
    Outcome.INVALID_CAMPAIGN: OutcomeRule(2, False),
    Outcome.STORE_ERROR: OutcomeRule(2, False),
    Outcome.CRASHED: OutcomeRule(EXIT_INTERNAL, True),
    Outcome.INTERNAL: OutcomeRule(EXIT_INTERNAL, False),
}


class SessionOutcome(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """One campaign session's end: what happened, the counts, why."""

    outcome: Outcome
    message: str
    campaign_uid: str | None = None
    completed: int = 0
    skipped: int = 0
    failed: int = 0
    unverified: int = 0
    signal_exit: int | None = None  # INTERRUPTED: 128 + the signal
    first_failure: str | None = None  # FAILED_RUNS: the first failed run's reason

    @property
    def exit_code(self) -> int:
        if self.outcome is Outcome.INTERRUPTED and self.signal_exit is not None:
            return self.signal_exit
        return OUTCOMES[self.outcome].exit_code

    @property
    def resumable(self) -> bool:
        return OUTCOMES[self.outcome].resumable

    def counts(self) -> str:
        return (f"{self.completed} run(s) completed, {self.skipped} resumed from earlier, "
                f"{self.failed} failed, {self.unverified} unverified")


class PauseRequested(BaseException):
    """Stop after the unit that just finished (a BaseException, like a signal, so the runner
    ends the campaign row with 'abort' and stops its processes)."""


def run_session(campaign: Campaign, db: Path, wire: Callable[[Any], Any], *,
                again: bool = False, again_if_finished: bool = False,
                made: Callable[[Any], None] | None = None) -> SessionOutcome:
    """Run ``campaign`` into store ``db`` and return how it ended; never raises for an
    expected end (a signal, a lost agent, a full disk, a busy bench, a refused store).

    ``wire(runner)`` attaches consumers and hooks to each runner made; ``made(runner)`` sees
    the first (the worker's health thread reads its clients). ``again_if_finished``: a
    campaign an earlier attempt finished runs anew (the daemon's first start of an item)."""
    from hilbench.orchestrator.runner import CampaignRunner

    failures = FirstFailure()

    def made_runner(again: bool) -> Any:
        runner = CampaignRunner(campaign, db, consumers=[], again=again)
        wire(runner)
        runner.extra_consumers.append(failures)
        return runner

    runner = made_runner(again)
    if made is not None:
        made(runner)
    try:
        result = runner.run()
        if result.finished_before and again_if_finished:
            result = made_runner(True).run()
    except BaseException as exc:  # sorted below; what is not an expected end goes on up
        ended = outcome_of_exception(exc, campaign.name, db)
        if ended is None:
            raise
        return ended
    if result.finished_before:
        return SessionOutcome(Outcome.NOTHING_TO_DO, f"campaign {result.campaign_uid[:8]} had "
                              "already finished; nothing ran", result.campaign_uid)
    return SessionOutcome(
        Outcome.FAILED_RUNS if result.failed else Outcome.COMPLETED, "",
        result.campaign_uid, result.completed, result.skipped, result.failed, result.unverified,
        first_failure=failures.reason)


class FirstFailure:
    """Keeps the first failed run's reason: why an item with failed runs failed, in history."""

    def __init__(self) -> None:
        self.reason: str | None = None

    def __call__(self, doc: Any) -> None:
        if (self.reason is None and getattr(doc, "kind", None) == "run_stop"
                and doc.exit_status == "fail"):
            self.reason = doc.reason or "no reason given"


def outcome_of_exception(exc: BaseException, name: str, db: Path) -> SessionOutcome | None:
    """The one table from an exception that ended a campaign to its outcome; None for one
    that is not an expected end (a bug: it goes on up)."""
    from hilbench.orchestrator.client import AgentUnreachable
    from hilbench.orchestrator.interrupt import Interrupted, interrupt_taken
    from hilbench.orchestrator.locks import BenchBusy
    from hilbench.orchestrator.runner import CampaignAborted, CampaignSetupError
    from hilbench.orchestrator.spawn import SpawnError
    from hilbench.power.source import InstrumentFault
    from hilbench.store import StoreError, StoreFault
    from hilbench.store.errors import is_storage_fault

    uid = getattr(getattr(exc, "outcome", None), "campaign_uid", None)
    if isinstance(exc, PauseRequested):
        return SessionOutcome(Outcome.PAUSED, "paused after a unit; `hilbench queue resume` "
                              "goes on", uid)
    if isinstance(exc, Interrupted):
        interrupt_taken()
        return SessionOutcome(
            Outcome.INTERRUPTED, f"campaign {name} {exc}: the run in progress is marked aborted,"
            f" the processes hilbench started are stopped; completed runs are in {db}", uid,
            signal_exit=exc.exit_code)
    if isinstance(exc, CampaignAborted):
        lost = isinstance(exc.__cause__, InstrumentFault)
        return SessionOutcome(Outcome.INSTRUMENT_LOST if lost else Outcome.AGENT_LOST,
                              str(exc), uid)
    if isinstance(exc, AgentUnreachable | SpawnError | InstrumentFault):
        kind = Outcome.INSTRUMENT_LOST if isinstance(exc, InstrumentFault) else Outcome.AGENT_LOST
        return SessionOutcome(kind, f"campaign {name} could not start: {exc}", uid)
    if isinstance(exc, StoreFault | OSError) and is_storage_fault(exc):
        # Committed runs are intact; the same campaign completes the statuses left open and
        # goes on once the disk is fixed.
        return SessionOutcome(Outcome.STORE_UNWRITABLE, f"campaign {name} stopped: {exc}; free "
                              "space or fix the disk, then resume", uid)
    if isinstance(exc, CampaignSetupError):
        if isinstance(exc.__cause__, BenchBusy) or "already running" in str(exc):
            return SessionOutcome(Outcome.BENCH_BUSY, str(exc), uid)
        return SessionOutcome(Outcome.INVALID_CAMPAIGN, str(exc), uid)
    if isinstance(exc, StoreError) and not isinstance(exc, StoreFault):
        return SessionOutcome(Outcome.STORE_ERROR, str(exc), uid)
    return None
