"""The daemon's worker: one process per queue item, running it with the campaign runner.

The daemon starts ``python -m hilbench.daemon.worker --db STORE --item ID`` for the item at
the head of its queue. The worker runs the item's campaign snapshot through the same
session runner as ``hilbench run`` (:mod:`hilbench.orchestrator.session`): the same resume rule,
the same typed outcome and exit code, which the daemon files by one table
(:mod:`hilbench.daemon.filing`). A separate process keeps the daemon small and
responsive whatever the campaign does, and a SIGKILLed daemon's worker is told to stop by the
kernel (parent-death signal), aborting the run in progress with the reason, as ``hilbench run``
does on SIGTERM.

It reports to the daemon on stdout, one typed message per line (:mod:`hilbench.daemon.messages`):
``campaign`` (uid, units), ``unit`` (each finished run), ``health`` (agents and instruments,
every second) and ``end`` (the session's outcome). It reads ``pause`` commands on stdin: stop
after the unit in progress.

Started without ``--item``, it is the daemon's spare: it imports what running an item needs
(Python, SQLAlchemy, the runner: ~0.6 s) while the bench is idle, then waits for an
``item`` command on stdin, so a queued campaign starts without that delay. An empty stdin
(the daemon closed it) ends it having done nothing.
"""

from __future__ import annotations

import argparse
import gc
import logging
import os
import sys
import threading
import time
from pathlib import Path
from typing import Any

import msgspec

from hilbench.clock import now
from hilbench.daemon.messages import (
    AgentHealth,
    CampaignStarted,
    Ended,
    Health,
    InstrumentHealth,
    Pause,
    Report,
    RunItem,
    UnitEnded,
    UnitStarted,
    decode_command,
    encode,
)
from hilbench.documents import DocumentRouter, PhaseStart, RunStart, RunStop, Samples
from hilbench.orchestrator.session import (
    EXIT_PAUSED,
    Outcome,
    PauseRequested,
    SessionOutcome,
    run_session,
)

log = logging.getLogger("hilbench.daemon.worker")

__all__ = ["EXIT_PAUSED", "PauseRequested", "Reporter", "main", "run_item"]


class Reporter:
    """One typed message per line on the daemon's pipe; a lock keeps lines whole."""

    def __init__(self, out: Any) -> None:
        self._out = out
        self._lock = threading.Lock()

    def __call__(self, message: Report) -> None:
        line = encode(message)
        with self._lock:
            try:
                self._out.write(line + "\n")
                self._out.flush()
            except (BrokenPipeError, ValueError):  # the daemon is gone; the run goes on to its end
                pass


class Progress(DocumentRouter):
    """Watches the run documents for what `hilbench status` shows."""

    def __init__(self, report: Reporter, units: list[Any], db: Path, item_id: int,
                 source: str, queue: str | None = None) -> None:
        self.report = report
        self.units = units
        self.db = db
        self.queue = queue or db
        self.item_id = item_id
        self.source = source
        self.skipped: set[str] = set()
        self.campaign_uid: str | None = None
        self.offsets: dict[str, dict[str, float]] = {}
        self.last_reading: dict[str, float] = {}  # source -> wall time of its last batch
        self._starts: dict[str, tuple[str, str, float]] = {}

    def on_plan(self, plan: Any) -> None:
        """Before anything starts: the campaign this item runs is in the queue item at once,
        so a daemon killed from here on resumes this campaign, never starts another."""
        from hilbench.daemon.queue_db import QueueDB

        if plan.action == "finished":
            return
        self.campaign_uid = plan.campaign_uid
        self.skipped = set(plan.done)
        with QueueDB(self.queue, store=self.db) as queue:
            queue.set_campaign(self.item_id, plan.campaign_uid)
        self.report(CampaignStarted(uid=plan.campaign_uid, total=len(self.units),
                                    done=len(plan.done), plan=self._plan(),
                                    message=plan.message(self.source)))

    def run_start(self, doc: RunStart) -> None:
        self._starts[doc.uid] = (str(doc.unit_key), doc.procedure, doc.t)
        self.report(UnitStarted(key=str(doc.unit_key), procedure=doc.procedure,
                                run_uid=doc.uid))

    def _plan(self) -> list[tuple[str, str, int, float | None, int]]:
        """[procedure, unit group, units left, expected slot s or None, stored runs] per kind
        of unit still to run: what the daemon's ETA starts from (hilbench.orchestrator.eta)."""
        from hilbench.orchestrator.eta import plan_entries, store_history

        left = [u for u in self.units if str(u.key) not in self.skipped]
        return plan_entries(left, store_history(self.db))

    def phase_start(self, doc: PhaseStart) -> None:
        self.offsets.update(doc.clock_offsets)

    def samples(self, doc: Samples) -> None:
        self.last_reading[doc.source] = time.time()

    def run_stop(self, doc: RunStop) -> None:
        key, procedure, t0 = self._starts.pop(doc.run_uid, ("?", "?", doc.t))
        self.report(UnitEnded(key=key, procedure=procedure, run_uid=doc.run_uid,
                              status=doc.exit_status, duration_s=doc.t - t0,
                              reason=doc.reason or ""))


def _text(value: Any) -> str | None:
    """An agent's claim about itself, as text (it crosses in untyped)."""
    return None if value is None else str(value)


def _health(runner: Any, progress: Progress) -> Health:
    t = now()
    agents = []
    for spec_id, client in list(runner.clients.items()):
        info = client.info or {}
        offset = progress.offsets.get(info.get("agent_id", spec_id)) or progress.offsets.get(
            spec_id, {})
        agents.append(AgentHealth(
            id=str(spec_id), host=_text(info.get("host")), driver=_text(info.get("driver")),
            address=_text(client.address), agent_id=_text(info.get("agent_id")),
            last_heard_s_ago=round(t - client.last_heard, 3),
            clock_offset_s=offset.get("offset_s"),
            clock_offset_uncertainty_s=offset.get("uncertainty_s"),
        ))
    instruments = []
    for inst_id, inst in list(runner.instruments.instruments.items()):
        source_info = inst.info
        last = progress.last_reading.get(inst_id) or progress.last_reading.get(source_info.name)
        instruments.append(InstrumentHealth(
            id=str(inst_id), identity=_text(source_info.name), driver=_text(inst.spec.driver),
            resource=inst.spec.resource or (f"simulated: {inst.spec.simulate}"
                                            if inst.spec.simulate else None),
            last_reading=last, simulated=bool(inst.simulated),
        ))
    return Health(agents=agents, instruments=instruments)


def cassette_folder(item: Any) -> Path | None:
    """Where a queue item's cassette goes: its ``--record`` folder, or for an item a schedule
    queued, ``item-ID`` inside the schedule's (one cassette per fire)."""
    if not item.record:
        return None
    return Path(item.record) / f"item-{item.id}" if item.schedule_id else Path(item.record)


def run_item(db: Path, item_id: int, report: Reporter, queue: str | None = None) -> int:
    """Run queue item ``item_id`` of ``queue`` (default: the store ``db``, where its runs
    go); reports its outcome to the daemon and returns its exit code."""
    from hilbench.daemon.queue_db import QueueDB

    with QueueDB(queue or db, store=db) as q:
        item = q.item(item_id)
    try:
        ended = _run_item(db, item, report, queue)
    except Exception as exc:  # reported to the daemon, which keeps going
        log.exception("queue item %d: internal error", item_id)
        ended = SessionOutcome(Outcome.INTERNAL, f"internal error: {type(exc).__name__}: {exc}")
    report(Ended(session=ended))
    return ended.exit_code


class _ItemFollow:
    """What the session runner tells the daemon about a queue item: progress and health each
    second, and a pause asked on stdin, taken after the unit in progress ends."""

    def __init__(self, db: Path, item: Any, report: Reporter, queue: str | None, name: str,
                 runlog: Any, recorder: Any) -> None:
        self.db, self.item, self.report, self.queue, self.name = db, item, report, queue, name
        self.runlog, self.recorder = runlog, recorder
        self.pause = threading.Event()
        self.stop_health = threading.Event()
        self.progress: Progress | None = None
        self.runner: Any = None

    def wire(self, runner: Any) -> None:
        if self.progress is None:  # the first runner made: the units are known
            self.progress = Progress(self.report, runner.units, self.db, self.item.id,
                                     self.item.source_path, self.queue)
            self.runlog.note(f"campaign {self.name} starting from the daemon's queue item "
                             f"{self.item.id}: {len(runner.units)} unit(s), store {self.db}")
            threading.Thread(target=self.send_health, daemon=True, name="health").start()
        self.runner = runner
        runner.extra_consumers = [self.runlog, self.progress,
                                  *([self.recorder] if self.recorder else [])]
        runner.on_plan = self.progress.on_plan
        runner.on_unit_done = self.unit_done

    def unit_done(self, unit: Any, status: str, run_uid: str | None) -> None:
        if self.pause.is_set() and status in ("success", "fail"):
            raise PauseRequested()

    def read_commands(self) -> None:
        for line in sys.stdin:
            if isinstance(decode_command(line), Pause):
                self.pause.set()

    def send_health(self) -> None:
        while not self.stop_health.wait(1.0):
            try:
                self.report(_health(self.runner, self.progress))
            except (RuntimeError, AttributeError, KeyError) as exc:  # mid start-up: next time
                log.debug("health not available yet: %s", exc)


def _run_item(db: Path, item: Any, report: Reporter, queue: str | None) -> SessionOutcome:
    from hilbench.cassette.recorder import CassetteRecorder
    from hilbench.orchestrator.gate import CampaignRefused, gate_snapshot
    from hilbench.orchestrator.interrupt import signals_interrupt
    from hilbench.orchestrator.runlog import RunLog
    from hilbench.store.paths import logs_dir

    try:  # the gate `hilbench run` passes, again now: drivers, memory or limits may have changed
        campaign = gate_snapshot(item.content, item.source_path, item.trials).campaign
    except CampaignRefused as exc:
        return SessionOutcome(Outcome.INVALID_CAMPAIGN, str(exc))
    runlog = RunLog.for_campaign(logs_dir(db), campaign.name, None)
    folder = cassette_folder(item)
    # The cassette `hilbench run --record` writes, channels included; a restarted item goes on
    # with its own, without channels from then on (one recording of the bench's traffic cannot
    # span a restart: CassetteRecorder sets the first attempt's aside).
    try:
        recorder = CassetteRecorder(folder, Path(item.source_path), campaign,
                                    content=item.content.encode(),
                                    owner=f"queue item {item.id} of {db.resolve()}",
                                    channels=True) if folder else None
    except (FileExistsError, NotADirectoryError) as exc:
        return SessionOutcome(Outcome.INVALID_CAMPAIGN, f"--record {folder}: {exc}")
    follow = _ItemFollow(db, item, report, queue, campaign.name, runlog, recorder)
    threading.Thread(target=follow.read_commands, daemon=True, name="commands").start()
    # As `hilbench run`: an unfinished attempt of this campaign resumes. An item's first start
    # whose campaign had already finished runs it again as a new campaign (queueing it asked
    # for that); a started item (its campaign recorded) never does: it resumes or is done.
    try:
        with signals_interrupt():
            ended = run_session(campaign, db, follow.wire,
                                again_if_finished=item.campaign_uid is None)
    finally:
        follow.stop_health.set()
        runlog.close()
        if recorder:
            recorder.close(discard_empty=True)
    progress = follow.progress
    if progress is not None and progress.campaign_uid and not ended.campaign_uid:
        ended = msgspec.structs.replace(ended, campaign_uid=progress.campaign_uid)
    if ended.outcome in (Outcome.COMPLETED, Outcome.FAILED_RUNS):
        ended = msgspec.structs.replace(ended, message=ended.counts())
    return ended


def preload() -> None:
    """Import what :func:`run_item` and the campaign's parsing need, before an item is known."""
    import hilbench.cassette.recorder
    import hilbench.daemon.queue_db
    import hilbench.orchestrator.campaign
    import hilbench.orchestrator.runner
    import hilbench.store.groups  # noqa: F401

    gc.freeze()  # what the imports made lives as long as the process: collections skip it


def wait_for_item(lines: Any) -> int | None:
    """The spare's item: the id of the first ``item`` command; None when the input ends."""
    for line in lines:
        command = decode_command(line) if line.strip() else None
        if isinstance(command, RunItem):
            return command.id
        if command is not None:
            log.warning("spare worker: ignoring %r before its item", line.strip()[:80])
    return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m hilbench.daemon.worker")
    parser.add_argument("--db", type=Path, required=True)
    parser.add_argument("--item", type=int, default=None,
                        help="the queue item to run [default: a spare: read 'item ID' from stdin]")
    parser.add_argument("--queue", default=None, help="the queue's database [default: --db]")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr,
                        format="%(asctime)s %(levelname)s worker %(name)s: %(message)s")
    out = sys.stdout
    sys.stdout = sys.stderr  # nothing but reports on the daemon's pipe
    item_id = args.item
    if item_id is None:
        preload()
        item_id = wait_for_item(iter(sys.stdin.readline, ""))
        if item_id is None:
            return 0
    return run_item(args.db, item_id, Reporter(out), args.queue)


if __name__ == "__main__":
    exit_code = main()
    # The item's store, queue, log and cassette are closed and its end is reported: leave
    # without the interpreter's teardown (0.13-0.22 s measured with a 1 ms QUBO campaign),
    # which the daemon, waiting for the exit, would add to every campaign's wall time.
    logging.shutdown()
    sys.stderr.flush()
    os._exit(exit_code)
