"""The daemon's loop: one queue item at a time in a worker process, schedules, supervision.

States (bluesky-queueserver's): ``idle`` (nothing to run, or the queue stopped), ``running``,
``paused`` (by `queue pause`; the item waits at its place), ``stopping`` (`queue stop`: the
current campaign finishes, then nothing more starts; or the daemon itself is stopping), and
``waiting`` (an item's end could not be written: the store's disk is full; tried each turn).

Restart safety: every transition is in the store first. An item left 'running' by a killed
daemon is taken up again before anything else; if its campaign had already ended (killed in the
moment between the campaign's last run and the item's move to the history), it goes to the
history without running again; otherwise the runner resumes it, each unit exactly once.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import signal
import socket
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

from sqlalchemy.exc import DBAPIError

from hilbench import __version__
from hilbench.daemon import schedule as sched
from hilbench.daemon.access import default_control, share_logs_folder, share_store
from hilbench.daemon.askers import group_id
from hilbench.daemon.config import DaemonConfig
from hilbench.daemon.control import ControlServer
from hilbench.daemon.filing import FILING, history_message, outcome_of_end
from hilbench.daemon.localtime import local_when
from hilbench.daemon.messages import Pause
from hilbench.daemon.notify import Notifier
from hilbench.daemon.push import Pusher
from hilbench.daemon.queue_db import Item, QueueDB
from hilbench.daemon.said import MODE_SAID, signal_said
from hilbench.daemon.sdnotify import SystemdNotifier
from hilbench.daemon.supervised import WorkerProcess, start_worker
from hilbench.lifeline import call_on_signal, pid_alive
from hilbench.orchestrator.locks import Held, LockRefused, hold
from hilbench.orchestrator.session import Outcome
from hilbench.private_files import open_private
from hilbench.store.errors import StoreDamaged
from hilbench.store.paths import logs_dir

log = logging.getLogger(__name__)

DISK_CHECK_S = 30.0
# What keeps the daemon from its queue without being a bug: the database out of reach or
# full (DBAPIError), or a damaged page read in the store (said in `status`, retried).
QUEUE_UNREACHABLE = (DBAPIError, StoreDamaged)
SCHEDULE_LOOKAHEAD = 3
HEARTBEAT_S = 2.0  # how often the bench's row in the queue database is refreshed


_VERB = {"campaign.finished": "finished", "campaign.failed": "failed",
         "campaign.aborted": "stopped"}


def _queue_problem(queue: QueueDB, exc: Exception) -> str:
    """The one line `status` and the log give for a queue the daemon cannot use."""
    return f"queue database {queue.describe()}: {getattr(exc, 'orig', None) or exc}"


class DaemonError(RuntimeError):
    """The daemon cannot start; the message says why."""


class Daemon:
    def __init__(self, config: DaemonConfig, db: Path, clock: Any = time.time) -> None:
        self.config = config
        self.db = Path(db).resolve()
        self.clock = clock
        self.started_at = clock()
        self.logs = logs_dir(self.db)
        d = config.daemon
        group = group_id(d.group)
        share_logs_folder(self.logs, group)
        self.bench = d.bench or socket.gethostname()
        self.queue_location: str | Path = d.queue if d.queue else self.db
        self.queue = QueueDB(self.queue_location, store=self.db)
        share_store(self.db, group)
        self._last_beat = 0.0
        self._worker_pid: int | None = None
        self.pusher = Pusher(self.db, d.push_to, d.push_interval_s) if d.push_to else None
        self._status_db: QueueDB | None = None
        self.worker: WorkerProcess | None = None
        self._unfiled: tuple[WorkerProcess, int] | None = None  # an end not written yet (disk full)
        self._spare: subprocess.Popen | None = None  # a worker waiting for its item
        self.last_error = ""
        self.state = "idle"
        self.detail = ""
        self.stopping = threading.Event()
        self.wake = threading.Event()
        self._lock = threading.Lock()  # the status thread reads what the loop writes
        self._next_fire: dict[int, tuple[float, float | None]] = {}
        self._stop_signal: int = signal.SIGTERM  # the one received, passed on to the worker
        self._disk_low = False
        self._seen_mode: str | None = None
        self._next_disk_check = 0.0
        self._worker_log = open_private(self.logs / "worker.log", "a")
        self.sd = SystemdNotifier()
        self._last_watchdog = 0.0
        n = config.notify
        self.notify = Notifier(n.urls, n.command, n.timeout_s)
        self._hold_daemon_lock()
        self._check_bench_free()
        self.control = ControlServer(
            d.control or default_control(self.logs, group),
            {"ping": lambda: "pong", "status": self.status, "wake": self._wake},
            key=d.key, authorized=d.authorized, insecure=d.insecure, group=group,
        )

    # -- start and stop ------------------------------------------------------------------------
    def _hold_daemon_lock(self) -> None:
        """One daemon per store; the kernel frees the lock however the daemon dies."""
        try:
            self._lock_file = hold(self.logs / "daemon.lock",
                                   f"pid {os.getpid()} on {socket.gethostname()}")
        except Held as exc:
            raise DaemonError(f"a daemon already serves {self.db} ({exc.holder})") from None
        except LockRefused as exc:
            raise DaemonError(str(exc)) from None

    def _check_bench_free(self) -> None:
        """One daemon per bench on a shared queue: another host's daemon seen lately under
        this bench's name is a configuration mistake that would run its items twice."""
        other = self.queue.daemon_info(self.bench)
        if not other or (other["host"] == socket.gethostname() and not pid_alive(other["pid"])):
            return
        if other["host"] == socket.gethostname() and other["pid"] == os.getpid():
            return
        ago = time.time() - other["last_seen"]
        if ago < self.config.daemon.down_after_s:
            raise DaemonError(
                f"bench {self.bench!r} is served by pid {other['pid']} on {other['host']} "
                f"(seen {ago:.0f} s ago) on {self.queue.describe()}; give this daemon another "
                "--bench, or stop that one")

    def _wait_for_old_worker(self) -> None:
        """A worker of a killed daemon got SIGTERM from the kernel and is closing its run;
        wait for it, so the resume finds the run closed and the bench free."""
        pid = self.queue.daemon_info(self.bench).get("worker_pid")
        if not pid:
            return
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as fh:
                if b"hilbench.daemon.worker" not in fh.read():
                    return
        except OSError:
            return
        log.warning("waiting for the worker of the previous daemon (pid %d) to stop", pid)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and Path(f"/proc/{pid}").exists():
            time.sleep(0.1)
        if Path(f"/proc/{pid}").exists():
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)

    def run(self) -> int:
        """The loop, until SIGTERM or SIGINT; returns the exit code (128 + signal)."""
        received: list[int] = []

        def on_signal(signum: int) -> None:
            received.append(signum)
            self._stop_signal = received[0]
            if len(received) == 1:
                log.info("%s received: the daemon is stopping (%s)", signal_said(signum),
                         "the run in progress is aborted and resumed at the next start"
                         if self.worker is not None else "no run in progress")
            self.stopping.set()
            # As the signal stops `hilbench run`: at once, not after the loop's current step (a
            # short unit could end and the next begin meanwhile, leaving no run to abort). The
            # worker gets the signal the daemon got, so the run's reason names it.
            w = self.worker
            if w is not None and w.proc.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    w.proc.send_signal(self._stop_signal)
            self.wake.set()

        call_on_signal(lambda: on_signal(signal.SIGTERM), signal.SIGTERM)
        call_on_signal(lambda: on_signal(signal.SIGINT), signal.SIGINT)
        self._wait_for_old_worker()
        # an item that waited for its store's disk is tried at once: the restart may be the
        # signal that space is back
        self._recorded(lambda: self.queue.release_waits(Outcome.STORE_UNWRITABLE.value))
        self.control.start()
        self._publish_info(None)
        if self.pusher is not None:
            self.pusher.start()
        log.info("hilbench daemon %s: bench %s, store %s, queue %s, control %s%s",
                 __version__, self.bench, self.db, self.queue.describe(),
                 self.control.endpoint,
                 f", pushing finished runs to {self.pusher.target}" if self.pusher else "")
        self.sd.ready(f"idle; control {self.control.endpoint}")
        failed = False
        try:
            while not self.stopping.is_set():
                try:
                    self._step()
                except QUEUE_UNREACHABLE as exc:  # the queue's database out of reach: wait
                    self.last_error = _queue_problem(self.queue, exc)
                    log.warning("%s; retrying", self.last_error)
                    self.stopping.wait(min(5.0, 10 * self.config.daemon.poll_s))
                self.wake.wait(self.config.daemon.poll_s)
                self.wake.clear()
        except Exception as exc:  # a bug: said and logged here, the traceback kept by launch
            failed = True
            log.error("the daemon is stopping on an internal error, %s: %s",
                      type(exc).__name__, exc)
            raise
        finally:
            self._shutdown()
            code = 128 + (received[0] if received else signal.SIGTERM)
            if failed:
                log.error("hilbench daemon (pid %d) stopped: an internal error (above)",
                          os.getpid())
            else:
                log.info("hilbench daemon (pid %d) stopped: %s; exit %d", os.getpid(),
                         signal_said(received[0]) if received else "a stop request", code)
        return code

    def _shutdown(self) -> None:
        self.sd.stopping("stopping")
        with self._lock:
            self.state, self.detail = "stopping", "the daemon is stopping"
        w = self.worker
        if w is not None and w.finished() is None:
            # As the signal stops `hilbench run`: the run in progress is aborted with the
            # reason; the item stays 'running' in the store, so the next start resumes it first.
            w.proc.send_signal(self._stop_signal)
            try:
                w.proc.wait(60)
            except subprocess.TimeoutExpired:
                log.error("worker %d ignored %s for 60 s; killing it", w.proc.pid,
                          signal.Signals(self._stop_signal).name)
                w.proc.kill()
                w.proc.wait()
            w.finished()  # every report it wrote is taken
        self._close_spare()
        if self.pusher is not None:
            self.pusher.stop()
        with self._lock:
            self.state, self.detail = "stopped", "the daemon stopped"
        with contextlib.suppress(Exception):  # a database out of reach does not block the stop
            self._publish_info(None)
        self.control.close()
        self.notify.close()
        self.queue.close()
        if self._status_db is not None:
            self._status_db.close()
        self._worker_log.close()

    def _publish_info(self, worker_pid: int | None) -> None:
        self._worker_pid = worker_pid
        self._beat()

    def _beat(self) -> None:
        """The bench's heartbeat row: who serves it, what it does, when it was last seen."""
        with self._lock:
            state, detail = self.state, self.detail
            item_id = self.worker.item.id if self.worker is not None else None
        self.queue.beat(
            self.bench, host=socket.gethostname(), pid=os.getpid(),
            control=self.control.endpoint,
            public_key=self.control.public_key.decode() if self.control.public_key else None,
            started_at=self.started_at, worker_pid=self._worker_pid, version=__version__,
            state=state, detail=detail, item_id=item_id, serves=self.config.daemon.serves,
            push=self.pusher.status() if self.pusher is not None else {},
        )
        self._last_beat = time.monotonic()

    # -- one turn of the loop ------------------------------------------------------------------
    def _step(self) -> None:
        now = self.clock()
        if time.monotonic() - self._last_beat >= HEARTBEAT_S:
            self._last_beat = time.monotonic()
            self._recorded(self._beat)  # a store that cannot be written stops no supervision
        if self.worker is not None:
            self._supervise(self.worker)
        if self._unfiled is not None:
            self._file_end(*self._unfiled)
        if self.worker is None and self._unfiled is None:
            self._maybe_start(now)
        if self.worker is None and not self.stopping.is_set():
            self._keep_spare()
        self._tick_schedules(now)
        self._check_disk(now)
        if self.sd.watchdog_s is not None and now - self._last_watchdog >= self.sd.watchdog_s:
            self.sd.watchdog()
            self._last_watchdog = now

    def _set_state(self, state: str, detail: str) -> None:
        with self._lock:
            changed = (state, detail) != (self.state, self.detail)
            self.state, self.detail = state, detail
        if changed:
            self.sd.status(f"{state}: {detail}" if detail else state)

    def _mode(self) -> str:
        """The queue's mode; a change (`queue pause`, `stop`, `resume`) is logged once."""
        mode = self.queue.mode()
        if mode != self._seen_mode:
            if self._seen_mode is not None or mode != "run":
                log.info("queue mode %s: %s", mode, MODE_SAID.get(mode, mode))
            self._seen_mode = mode
        return mode

    def _maybe_start(self, now: float) -> None:
        mode = self._mode()
        if mode != "run":
            self._set_state("paused" if mode.startswith("pause") else "idle",
                            {"stop": "queue stopped; `hilbench queue resume` starts it"}.get(
                                mode, "queue paused; `hilbench queue resume` goes on"))
            return
        item = self.queue.claim(self.bench, now)
        if item is None:
            waiting = self.queue.items(self.bench)
            self._set_state("idle", (f"{len(waiting)} item(s) waiting; item {waiting[0].id}: "
                                     f"{waiting[0].message}") if waiting else "queue empty")
            return
        if item.state == "running" and item.campaign_uid:
            status = self.queue.campaign_status(item.campaign_uid)
            if status in ("success", "fail"):
                # Killed after the campaign ended, before the item moved: never run it twice.
                self._close_item(item, "completed" if status == "success" else "failed",
                                 f"campaign {item.campaign_uid[:8]} had ended ({status}) when "
                                 "the daemon restarted")
                return
        self.worker = WorkerProcess(item, self._take_spare() or self._new_worker(), self.wake.set,
                                    self._lock)
        self._publish_info(self.worker.proc.pid)
        log.info("queue item %d (%s) started: worker pid %d", item.id, item.name,
                 self.worker.proc.pid)
        self._set_state("running", f"item {item.id} ({item.name})")

    def _new_worker(self) -> subprocess.Popen:
        return start_worker(self.db, self._worker_log,
                            str(self.queue_location) if self.queue.shared else None)

    def _keep_spare(self) -> None:
        """While the bench is idle, a worker waits with its imports done (~0.6 s of start-up
        off the next campaign's wall time); one that died is replaced."""
        if self._spare is not None and self._spare.poll() is not None:
            log.warning("spare worker %d exited with %s; starting another", self._spare.pid,
                        self._spare.returncode)
            self._close_spare()
        if self._spare is None:
            self._spare = self._new_worker()

    def _take_spare(self) -> subprocess.Popen | None:
        spare, self._spare = self._spare, None
        if spare is not None and spare.poll() is not None:
            self._spare = spare
            self._close_spare()
            return None
        return spare

    def _close_spare(self) -> None:
        """End the spare: its stdin closed, it exits having done nothing."""
        spare, self._spare = self._spare, None
        if spare is None:
            return
        for stream in (spare.stdin, spare.stdout):
            with contextlib.suppress(OSError):
                stream.close()  # type: ignore[union-attr]
        try:
            spare.wait(10)
        except subprocess.TimeoutExpired:
            spare.kill()
            spare.wait()

    def _supervise(self, w: WorkerProcess) -> None:
        mode = self._mode()
        if mode == "pause" and not w.pause_sent:
            w.command(Pause())
            w.pause_sent = True
            self._set_state("paused", f"item {w.item.id}: pausing after the current unit")
        elif mode == "pause_now" and not w.term_sent:
            w.proc.send_signal(signal.SIGTERM)
            w.term_sent = True
            self._set_state("paused", f"item {w.item.id}: pausing now (run in progress aborted)")
        elif mode == "stop":
            self._set_state("stopping", f"item {w.item.id} finishes, then the queue stops")
        code = w.finished()
        if code is None:
            return
        self.worker = None
        self._worker_pid = None
        self._file_end(w, code)
        self._recorded(lambda: self._publish_info(None))

    def _recorded(self, write: Any) -> bool:
        """Do a write to the queue's database; one that fails (its disk full, out of reach) is
        logged and said in `status`, and the loop goes on."""
        try:
            write()
            return True
        except QUEUE_UNREACHABLE as exc:
            self.last_error = _queue_problem(self.queue, exc)
            log.warning("%s", self.last_error)
            return False

    def _file_end(self, w: WorkerProcess, code: int) -> None:
        """File the worker's end; while that cannot be written (the store's disk is full),
        keep it, start nothing, say why, and try again each turn of the loop."""
        if self._recorded(lambda: self._after(w, code)):
            self._unfiled = None
            return
        self._unfiled = (w, code)
        ended = outcome_of_end(w.end, code, w.term_sent or self.stopping.is_set())
        self._set_state("waiting", f"item {w.item.id}: {FILING[ended.outcome].says}"
                                   f"{history_message(ended)} (its end is not in the queue yet: "
                                   f"{self.last_error})")

    # -- a worker's end ------------------------------------------------------------------------
    def _after(self, w: WorkerProcess, code: int) -> None:
        """File the worker's outcome by the one table (:data:`FILING`)."""
        item = self.queue.item(w.item.id)
        ended = outcome_of_end(w.end, code, w.term_sent or self.stopping.is_set())
        filing = FILING[ended.outcome]
        uid = item.campaign_uid or ended.campaign_uid
        message = filing.says + history_message(ended, self.queue.run_counts(uid) if uid
                                                else None)
        name = f"queue item {item.id} ({item.name})"
        fields = {"item": item.id, "campaign": item.name, "campaign_uid": item.campaign_uid,
                  "exit_code": code, "outcome": ended.outcome.value}
        kind = ended.outcome.value
        delay = getattr(self.config.daemon, filing.delay) if filing.delay else 0.0
        if filing.status == "failed" or filing.action in ("wait", "retry"):
            self.last_error = f"{name}: {message}"
        if filing.action == "close":
            self._close_item(item, filing.status or "failed", message, kind)
        elif filing.action == "requeue":
            if not self.stopping.is_set():  # a stopping daemon leaves it 'running': resumed first
                self.queue.requeue(item.id, attempts=item.attempts, not_before=0,
                                   message=message, outcome=kind)
        elif filing.action == "wait":
            self.queue.requeue(item.id, attempts=item.attempts,
                               not_before=self.clock() + delay, message=message, outcome=kind)
        else:  # retry: counted unless this start finished a unit
            self._retry(item, w, message, delay, filing.event, fields)
            filing = FILING[Outcome.CRASHED]  # notified there
        if filing.event:
            self.notify(filing.event, f"{name} {_VERB.get(filing.event, 'ended')}: {message}",
                        **fields)
        log.log(logging.INFO if code == 0 else logging.WARNING, "%s: worker exited %d (%s): %s",
                name, code, kind, message)

    def _retry(self, item: Item, w: WorkerProcess, message: str, delay: float, lost: str | None,
               fields: dict[str, Any]) -> None:
        """An agent or instrument lost, a crash: again after ``delay``, until ``retries``
        starts in a row finished no unit."""
        name = f"queue item {item.id} ({item.name})"
        if lost:
            self.notify(lost, f"{name}: {message}", **fields)
        kind = fields["outcome"]
        attempts = 0 if w.progress.done_this_start else item.attempts + 1
        if attempts > self.config.daemon.retries:
            self._close_item(item, "failed", f"{message} (gave up after {attempts} start(s) "
                                             "in a row that finished no unit)", kind)
            self.notify("campaign.failed", f"{name} failed: {message}", **fields)
        else:
            self.queue.requeue(item.id, attempts=attempts, not_before=self.clock() + delay,
                               message=f"retrying in {delay:g} s: {message}", outcome=kind)
            self.notify("campaign.aborted", f"{name} aborted, will resume: {message}", **fields)

    def _close_item(self, item: Item, status: str, message: str,
                    outcome: str | None = None) -> None:
        runs = self.queue.run_uids(item.campaign_uid) if item.campaign_uid else []
        self.queue.finish(item.id, status, message, runs, outcome)  # type: ignore[arg-type]

    # -- schedules and disk --------------------------------------------------------------------
    def _tick_schedules(self, now: float) -> None:
        for s in self.queue.schedules():  # every schedule: its items wait for their bench
            cached = self._next_fire.get(s["id"])
            if cached is not None and cached[0] == s["last_fire"] and (
                    cached[1] is None or cached[1] > now):
                continue
            plan = sched.plan(s["cron"], s["tz"], s["missed"], s["last_fire"], now,
                              self.started_at)
            if plan is not None:
                item_id = self.queue.record_fires(s["id"], plan.last_fire, plan.fires,
                                                  plan.queue_item)
                if item_id is not None:
                    self._gate_fire(s, item_id)
                for t, outcome, note in plan.fires:
                    log.info("schedule %d (%s) fire at %s: %s%s", s["id"], s["name"],
                             local_when(t), outcome,
                             f" (item {item_id})" if outcome == "queued" else f": {note}")
                last = plan.last_fire
            else:
                last = s["last_fire"]
            upcoming = sched.fires_after(s["cron"], s["tz"], last, 1)
            self._next_fire[s["id"]] = (last, upcoming[0] if upcoming else None)

    def _gate_fire(self, s: dict[str, Any], item_id: int) -> None:
        """The gate `schedule add` passed, again at the fire: an interpreter, a driver or the
        memory the campaign needs may be gone. A refused fire's item goes to the history as
        failed, with the reason."""
        from hilbench.orchestrator.gate import CampaignRefused, gate_snapshot

        try:
            gate_snapshot(s["content"], s["source_path"], s["trials"])
        except CampaignRefused as exc:
            reason = "; ".join(exc.problems)
            log.warning("schedule %d (%s): fire refused: %s", s["id"], s["name"], reason)
            self._close_item(self.queue.item(item_id), "failed",
                             f"refused at the fire of schedule {s['id']}: {reason}",
                             Outcome.INVALID_CAMPAIGN.value)
            self.last_error = f"schedule {s['id']} ({s['name']}): fire refused: {reason}"
            self.notify("campaign.failed", self.last_error, schedule=s["id"], item=item_id)

    def _check_disk(self, now: float) -> None:
        if now < self._next_disk_check:
            return
        self._next_disk_check = now + DISK_CHECK_S
        free_mb = shutil.disk_usage(self.db.parent).free / 2**20
        low = free_mb < self.config.daemon.disk_min_free_mb
        if low and not self._disk_low:
            self.last_error = f"low disk space: {free_mb:.0f} MiB free beside {self.db}"
            self.notify("disk.low", self.last_error, free_mb=free_mb, store=str(self.db))
        self._disk_low = low

    def _wake(self) -> str:
        self.wake.set()
        return "awake"

    # -- status (control thread) ---------------------------------------------------------------
    def status(self) -> dict[str, Any]:
        if self._status_db is None:
            self._status_db = QueueDB(self.queue_location, store=self.db)
        db = self._status_db
        with self._lock:
            w = self.worker
            current = ({**w.progress.to_dict(), "rejected_reports": w.decoder.rejected}
                       if w is not None else None)
            health = dict(w.progress.health) if w is not None else {"agents": [],
                                                                      "instruments": []}
            state, detail = self.state, self.detail
        items = db.items(self.bench)
        now = time.time()
        schedules = [
            {"id": s["id"], "name": s["name"], "cron": s["cron"], "tz": s["tz"],
             "missed": s["missed"], "next": sched.fires_after(s["cron"], s["tz"],
                                                              max(now, s["last_fire"]),
                                                              SCHEDULE_LOOKAHEAD)}
            for s in db.schedules(self.bench)
        ]
        return {
            "daemon": {"state": state, "detail": detail, "pid": os.getpid(),
                       "host": socket.gethostname(), "store": str(self.db),
                       "started_at": self.started_at, "version": __version__,
                       "mode": db.mode(), "bench": self.bench, "queue": db.describe()},
            "current": current,
            **health,
            "last_error": self.last_error,
            "queue": {"length": len(items), "head": [i.summary() for i in items[:5]]},
            "schedules": schedules,
            "notifications": {"sent": self.notify.sent, "failed": self.notify.failed,
                              "last_error": self.notify.last_error},
            "push": self.pusher.status() if self.pusher is not None else None,
        }
