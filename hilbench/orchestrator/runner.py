"""Run a campaign: start or connect agents, run every unit as a run, resume where it stopped.

Each unit becomes one run of documents. A unit already finished with success in an earlier,
interrupted attempt of the same campaign (same configuration hash, same store) is skipped; runs
that attempt left without a status (its orchestrator was killed) are marked "abort" with the
reason. A lost agent or a failing instrument stops the campaign: the run in progress is stopped
with status "fail" and a reason that names the agent or instrument, and the runs committed
before it stay in the store. Every campaign row ends with a status, whatever stopped it.
"""

from __future__ import annotations

import contextlib
import copy
import logging
import os
import socket
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hilbench import __version__
from hilbench.clock import now
from hilbench.contracts.remote import RemoteDevice
from hilbench.documents import (
    DocumentConsumer,
    DocumentStream,
    ExitStatus,
    RunStart,
    RunStop,
    new_uid,
)
from hilbench.orchestrator.campaign import AgentSpec, Campaign
from hilbench.orchestrator.client import AgentClient, AgentLost
from hilbench.orchestrator.instruments import InstrumentSet
from hilbench.orchestrator.interrupt import (
    Interrupted,
    deferred_interrupts,
    raise_if_interrupted,
)
from hilbench.orchestrator.listener import AgentListener
from hilbench.orchestrator.locks import BenchBusy, Held, LockRefused, bench_lock, hold
from hilbench.orchestrator.phases import RunContext
from hilbench.orchestrator.procedure import Unit, expand_all
from hilbench.orchestrator.reference_link import reference
from hilbench.orchestrator.resume import ResumePlan, plan_resume
from hilbench.orchestrator.retry_wait import retry_wait_s, wait_out
from hilbench.orchestrator.spawn import SpawnedProcess, spawn_agent
from hilbench.orchestrator.timing_check import TimingUnverified
from hilbench.power.source import InstrumentFault
from hilbench.private_files import private_dir
from hilbench.simulation import run_simulation
from hilbench.store import StoreError, StoreFault, StoreWriter
from hilbench.store.errors import is_storage_fault
from hilbench.store.paths import logs_dir
from hilbench.wire import keys
from hilbench.wire.link import AgentError

log = logging.getLogger(__name__)

UNFINISHED_REASON = (
    "the orchestrator stopped before this run ended (killed, crashed, or its store could not be"
    " written); found on resume"
)


class CampaignAborted(RuntimeError):
    """The campaign could not go on (an agent or instrument was lost or failed); completed runs
    are in the store."""

    def __init__(self, message: str, outcome: CampaignOutcome) -> None:
        super().__init__(message)
        self.outcome = outcome


class CampaignStoreFault(StoreFault):
    """The store could not be written (disk full, I/O error, read-only): the campaign stopped;
    runs committed before it are intact and the same command resumes."""

    def __init__(self, message: str, outcome: CampaignOutcome) -> None:
        super().__init__(message)
        self.outcome = outcome


class CampaignSetupError(RuntimeError):
    """A unit could not be prepared (its data, model or target); nothing of it was run."""


@dataclass
class CampaignOutcome:
    campaign_uid: str
    store_path: Path
    total: int = 0
    completed: int = 0
    skipped: int = 0
    failed: int = 0
    unverified: int = 0  # runs whose timing could not be verified (each tried again, counted)
    started: int = 0  # runs begun in this attempt
    run_uids: list[str] = field(default_factory=list)
    finished_before: bool = False  # an earlier attempt had finished: nothing was run


@contextlib.contextmanager
def _campaign_lock(log_dir: Path, campaign: Campaign, store_path: Path) -> Iterator[None]:
    """Hold a lock on this campaign in this store while it runs. The kernel releases it when
    the process dies, however it dies, so a resume knows that an unfinished run it finds was
    left by a dead orchestrator, never by one still running."""
    private_dir(log_dir)
    path = log_dir / f"campaign-{campaign.config_hash()[:16]}.lock"
    try:
        fh = hold(path, f"pid {os.getpid()} on {socket.gethostname()}")
    except Held as exc:
        raise CampaignSetupError(
            f"campaign {campaign.name} is already running against {store_path} "
            f"({exc.holder}); wait for it or stop it first"
        ) from None
    except LockRefused as exc:
        raise CampaignSetupError(f"{exc}; campaign {campaign.name} not started") from None
    with fh:
        yield


def stop_reason(exc: BaseException, outcome: CampaignOutcome) -> str:
    """Why a campaign stopped, as stored with its status: 'could not start: …' when no unit
    had run yet."""
    text = str(exc) if isinstance(exc, Interrupted) else (str(exc) or type(exc).__name__)
    if not outcome.started:
        return f"could not start: {text}"
    return text


def _close_unbroken(writer: StoreWriter) -> None:
    with deferred_interrupts():  # a signal now waits: the store's last writes are not cut
        writer.close()


class CampaignRunner:
    """Runs one campaign against its agents, feeding documents to the store and any consumers."""

    def __init__(
        self,
        campaign: Campaign,
        store_path: Path,
        consumers: list[DocumentConsumer] | None = None,
        resume: bool = True,
        again: bool = False,
    ) -> None:
        self.campaign = campaign
        # A file as a Path; a PostgreSQL store as its DbTarget (str() hides the password)
        self.store_path = store_path if hasattr(store_path, "backend") else Path(store_path)
        self.extra_consumers = list(consumers or [])
        # again (or resume=False): a new campaign whatever earlier attempts did
        self.again = again or not resume
        self.clients: dict[str, AgentClient] = {}
        self.devices: dict[str, RemoteDevice] = {}  # what procedures receive, one per agent
        self.spawned: dict[str, SpawnedProcess] = {}
        self.log_dir = logs_dir(self.store_path)  # spawned processes' logs, kept on failure
        self.instruments = InstrumentSet(list(campaign.instruments), log_dir=self.log_dir)
        self.listener: AgentListener | None = None
        self.units = expand_all(campaign)
        self.on_unit_done = None  # callable(unit, status, run_uid) for progress display
        self.on_plan: Callable[[ResumePlan], None] | None = None  # told before anything starts
        self.plan: ResumePlan | None = None
        # False for a replay (hilbench.cassette.replay): stand-ins occupy no bench
        self.lock_bench = True

    # ---------------------------------------------------------------- agents
    def start_agents(self) -> None:
        if any(spec.connects for spec in self.campaign.agents):
            assert self.campaign.listen is not None
            self.listener = AgentListener(
                self.campaign.listen,
                handshake_timeout_s=self.campaign.connect_timeout_s,
                **self._listener_keys(),
            )
            log.warning("waiting for agents to connect to %s", self.listener.start())
            if self.campaign.listener_is_insecure():
                log.warning(
                    "INSECURE: listening for agents on %s in plaintext with no key ([campaign] "
                    "insecure = true): any process that reaches this address can pose as an agent",
                    self.listener.endpoint,
                )
        for spec in self.campaign.agents:
            if spec.connects:
                assert self.listener is not None
                link = self.listener.wait_for(spec.id, timeout_s=self.campaign.listen_timeout_s)
                self.clients[spec.id] = link
                continue
            address = spec.address
            link_keys = self._client_keys(spec)
            if spec.spawn:
                agent = spawn_agent(spec, log_dir=self.log_dir)
                self.spawned[spec.id] = agent
                address = agent.address
                link_keys = agent.client_keys()  # ephemeral: only this orchestrator talks to it
            assert address is not None
            client = AgentClient(
                address,
                spec.id,
                connect_timeout_s=self.campaign.connect_timeout_s,
                **link_keys,
            )
            client.connect()
            self.clients[spec.id] = client
            log.info("agent %s connected: %s", spec.id, client.info.get("agent_id"))
        for spec in self.campaign.agents:  # R13a: what its echoes are held to
            self.clients[spec.id].link_budget_s = spec.link_budget_ms / 1e3
            self.clients[spec.id].reference_burst = reference().burst
            self._link_simulated_meter(spec.id)
        self.devices = {name: RemoteDevice(link) for name, link in self.clients.items()}

    def _link_simulated_meter(self, agent_id: str) -> None:
        """A device on the simulated bench tells the simulated meter what it is doing: the
        meter's address goes to the agent in ``configure {sim_meter}``, however the agent was
        started. An agent that cannot take it (another host, whose clock the meter does not
        share; a driver without the link) refuses the campaign before any run."""
        sim = self.instruments.sim_address_for(agent_id)
        if sim is None:
            return
        link = self.clients[agent_id]
        meter = self.instruments.simulated_meter_for(agent_id)
        host = link.info.get("host")
        if host is not None and host != socket.gethostname():
            raise CampaignSetupError(
                f"the simulated meter {meter} follows agent {agent_id}'s device on this host's "
                f"clock, but the agent runs on {host!r}: run the agent here, or measure it with "
                "a real instrument (resource = ...)")
        try:
            link.request("configure", {"sim_meter": sim}, timeout_s=30)
        except AgentError as exc:
            raise CampaignSetupError(
                f"the simulated meter {meter} cannot follow agent {agent_id}'s device: {exc}. "
                "Without that link it would report idle power as active; measure this agent "
                "with a real instrument instead") from exc

    def _client_keys(self, spec: AgentSpec) -> dict[str, Any]:
        """CurveZMQ settings for an agent the campaign gives a key (see `hilbench keys`)."""
        if spec.key is None or self.campaign.key is None:
            return {}
        return {"key": keys.load_pair(self.campaign.key), "agent_key": keys.load_public(spec.key)}

    def _listener_keys(self) -> dict[str, Any]:
        if self.campaign.key is None:
            return {}
        dialling = {
            s.id: keys.load_public(s.key) for s in self.campaign.agents if s.connects and s.key
        }
        return {"key": keys.load_pair(self.campaign.key), "agent_keys": dialling}

    def stop_agents(self) -> None:
        for spec_id, client in self.clients.items():
            if spec_id in self.spawned:
                with contextlib.suppress(AgentError, AgentLost, TimeoutError, OSError):
                    client.request("shutdown", timeout_s=2)
            client.close()
        for agent in self.spawned.values():
            agent.stop()
        if self.listener is not None:
            self.listener.close()
        self.instruments.close()

    # ------------------------------------------------------------------- run
    def run(self) -> CampaignOutcome:
        with _campaign_lock(self.log_dir, self.campaign, self.store_path):
            try:
                held = bench_lock(self.campaign) if self.lock_bench else contextlib.ExitStack()
            except BenchBusy as exc:  # nothing started: refused like a campaign already running
                raise CampaignSetupError(str(exc)) from exc
            with held:
                return self._run_locked()

    def _run_locked(self) -> CampaignOutcome:
        config = {**self.campaign.config_dict(), "config_hash": self.campaign.config_hash()}
        plan = plan_resume(
            self.store_path, config, (str(u.key) for u in self.units), again=self.again
        )
        self.plan = plan
        log.info("%s", plan.message(self.campaign.source or self.campaign.name))
        if self.on_plan is not None:
            self.on_plan(plan)
        campaign_uid = plan.campaign_uid
        outcome = CampaignOutcome(campaign_uid, self.store_path, total=len(self.units))
        if plan.action == "finished":
            outcome.skipped = len(self.units)
            outcome.finished_before = True
            return outcome
        with contextlib.ExitStack() as closing:
            with deferred_interrupts():  # a store file created but not yet a store: never
                writer = StoreWriter(self.store_path)
                # closed however the rest ends, also by a signal taken as this deferral ends
                # (its handler runs in contextlib's exit, before the ``try`` below)
                closing.callback(_close_unbroken, writer)
            return self._run_in_store(writer, config, plan, outcome)

    def _run_in_store(self, writer: StoreWriter, config: dict[str, Any], plan: ResumePlan,
                      outcome: CampaignOutcome) -> CampaignOutcome:
        campaign_uid = plan.campaign_uid
        try:
            writer.begin_campaign(campaign_uid, self.campaign.name, config)
            raise_if_interrupted()  # one that waited while the store was being created
            if plan.action == "resume":
                for run_uid in writer.abort_unfinished_runs(campaign_uid, UNFINISHED_REASON):
                    log.warning("run %s of the earlier attempt marked aborted: %s",
                                run_uid[:8], UNFINISHED_REASON)
            self._run_units(DocumentStream([writer, *self.extra_consumers]), plan, outcome)
            if outcome.failed:
                writer.end_campaign(campaign_uid, "fail", f"{outcome.failed} run(s) failed")
            else:
                writer.end_campaign(campaign_uid, "success")
            return outcome
        except BaseException as exc:
            # Whatever stopped it (a lost agent, a silent instrument at start, a signal), the
            # campaign row ends with a status and the reason. After a full disk this may fail
            # too: the next run of the campaign gives it one.
            try:
                writer.end_campaign(campaign_uid, "abort", stop_reason(exc, outcome))
            except StoreError as store_exc:  # the error that stopped it is the one to report
                log.error("could not mark campaign %s aborted: %s", campaign_uid[:8], store_exc)
            if is_storage_fault(exc) and not isinstance(exc, CampaignStoreFault):
                raise CampaignStoreFault(
                    f"{exc}; {outcome.completed} run(s) completed before it are in "
                    f"{self.store_path}",
                    outcome,
                ) from exc
            raise
        finally:
            # Stopping what was started is not cut short by a signal (it waits until the end).
            with deferred_interrupts():
                self.stop_agents()

    def _run_units(self, stream: DocumentStream, plan: Any, outcome: CampaignOutcome) -> None:
        """Open the instruments, start the agents and run each unit the plan has not done."""
        self.instruments.open()
        self.start_agents()
        for unit in self.units:
            raise_if_interrupted()
            if str(unit.key) in plan.done:
                outcome.skipped += 1
                self._notify(unit, "skipped", None)
                continue
            outcome.run_uids += self._run_unit(stream, plan.campaign_uid, unit, outcome)

    def _run_unit(
        self,
        stream: DocumentStream,
        campaign_uid: str,
        unit: Unit,
        outcome: CampaignOutcome,
    ) -> list[str]:
        """The unit's runs: one, or while its timing cannot be verified (a loaded host), up
        to ``[campaign] timing_attempts``; each attempt is a run of its own, counted."""
        # What a unit prepares (a target, a graph's independent set) lives as long as its run:
        # the campaign's list keeps the unprepared unit, so memory does not grow run by run.
        unit = copy.copy(unit)
        try:
            params = {**unit.params(), **unit.prepare()}
        except (ValueError, OSError, RuntimeError) as exc:
            # Nothing ran yet: a unit that cannot be prepared (unusable data set, corrupt model,
            # no target) stops the campaign with the reason, before any run is recorded.
            raise CampaignSetupError(f"cannot prepare {unit.key}: {exc}") from exc
        attempts = self.campaign.timing_attempts
        run_uids = []
        for attempt in range(1, attempts + 1):
            self._wait_before(unit, attempt, attempts)
            run_uid, status = self._attempt(stream, campaign_uid, unit, params, outcome,
                                            (attempt, attempts))
            run_uids.append(run_uid)
            if status != "unverified":
                break
        return run_uids

    def _wait_before(self, unit: Unit, attempt: int, attempts: int) -> None:
        """Before a further attempt, let a spell of load on the host pass (:mod:`.retry_wait`)."""
        wait = retry_wait_s(self.campaign.timing_retry_wait_s, attempt - 1)
        if wait > 0:
            log.warning("%s: trying again in %g s (attempt %d of %d), when the host may be "
                        "less busy", unit.key, wait, attempt, attempts)
            wait_out(wait)

    def _attempt(
        self,
        stream: DocumentStream,
        campaign_uid: str,
        unit: Unit,
        params: dict[str, Any],
        outcome: CampaignOutcome,
        attempt: tuple[int, int],
    ) -> tuple[str, ExitStatus]:
        """One run of a prepared unit; its uid and how it ended."""
        client = self.clients[unit.agent]
        device = self.devices[unit.agent]
        run_uid = new_uid()
        agents = {unit.agent: {**client.info, "address": client.address}}
        instruments = self.instruments.measuring(unit.agent)
        # A unit that reads no instrument (e.g. ASC single stream) is not built on one.
        simulation = run_simulation(agents, instruments if unit.uses_instruments else [])
        start = RunStart(
            run_uid,
            campaign_uid,
            str(unit.key),
            unit.procedure,
            params,
            agents,
            now(),
            time.time(),
            __version__,
            simulated=bool(simulation),
            simulation=simulation,
        )
        # A signal during the start document or a stop document would leave the run half
        # written: it waits for the next checkpoint. The start is inside the ``try``: a signal
        # taken as the deferral ends (its handler runs in contextlib's exit, before any line
        # after the ``with``) is then this run's abort, not a run left without a status (a
        # Ctrl-C of the demo left one "incomplete").
        started = False
        try:
            with deferred_interrupts():
                stream.emit(start)
                started = True
                outcome.started += 1
            ctx = RunContext(stream, run_uid)
            raise_if_interrupted()
            unit.run(ctx, device, instruments)
        except AgentLost as exc:
            reason = f"{exc} (host {socket.gethostname()}, run {run_uid}, unit {unit.key})"
            self._end_run(stream, unit, run_uid, "fail", reason)
            outcome.failed += 1
            raise CampaignAborted(
                f"campaign {self.campaign.name} stopped: agent {exc.agent} was lost during run "
                f"{run_uid[:8]} ({unit.key}); {outcome.completed} run(s) completed before it are "
                f"in {self.store_path}",
                outcome,
            ) from exc
        except InstrumentFault as exc:
            # One rule for every instrument fault (an error, no answer, overload, lost readings):
            # the run is invalid and the campaign stops, as for a lost agent. Later runs would
            # be measured by the same instrument; run again to resume once it is fixed.
            self._end_run(stream, unit, run_uid, "fail", f"invalid: {exc}")
            outcome.failed += 1
            raise CampaignAborted(
                f"campaign {self.campaign.name} stopped: {exc} during run {run_uid[:8]} "
                f"({unit.key}); the run is marked invalid; {outcome.completed} run(s) completed "
                f"before it are in {self.store_path}",
                outcome,
            ) from exc
        except TimingUnverified as exc:
            n, of = attempt
            again = "tried again" if n < of else "no attempt left: counted as unverified"
            self._end_run(stream, unit, run_uid, "unverified",
                          f"{exc} (attempt {n} of {of}: {again})",
                          notify="unverified" if n == of else "retried")
            outcome.unverified += 1
            log.warning("run %s (%s) unverified, attempt %d of %d: %s", run_uid[:8], unit.key,
                        n, of, exc)
            return run_uid, "unverified"
        except (AgentError, TimeoutError) as exc:
            self._end_run(stream, unit, run_uid, "fail", str(exc))
            outcome.failed += 1
            log.error("run %s (%s) failed: %s", run_uid[:8], unit.key, exc)
            return run_uid, "fail"
        except BaseException as exc:
            if not started:  # no start document: no run to close
                raise
            reason = str(exc) if isinstance(exc, Interrupted) else f"{type(exc).__name__}: {exc}"
            if is_storage_fault(exc):  # the store may refuse the stop document too
                with contextlib.suppress(StoreError, OSError):
                    self._end_run(stream, unit, run_uid, "abort", reason)
                raise
            self._end_run(stream, unit, run_uid, "abort", reason)
            raise
        self._end_run(stream, unit, run_uid, "success")
        outcome.completed += 1
        return run_uid, "success"

    def _end_run(
        self, stream: DocumentStream, unit: Unit, run_uid: str, status: ExitStatus,
        reason: str = "", notify: str | None = None,
    ) -> None:
        """Emit a run's stop document whole, then tell the progress display (``notify``:
        "retried" for an unverified run whose unit is tried again). A stop signal meanwhile
        waits for the next checkpoint (half written, the run would be left without a status)."""
        with deferred_interrupts():
            stream.emit(RunStop(run_uid, now(), status, reason))
        self._notify(unit, notify or status, run_uid)

    def _notify(self, unit: Unit, status: str, run_uid: str | None) -> None:
        if self.on_unit_done is not None:
            self.on_unit_done(unit, status, run_uid)
