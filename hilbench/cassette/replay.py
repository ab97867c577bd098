"""`hilbench replay CASSETTE`: the recorded campaign run again by the real orchestrator, its
outside world played back from the cassette's channels, and every figure compared.

The orchestrator runs unmodified (:class:`hilbench.orchestrator.runner.CampaignRunner`, a
throw-away store). What it talks to stands in for the bench
(:mod:`hilbench.cassette.standins`): each agent is a ZeroMQ ROUTER on loopback answering from
its channel (CurveZMQ too, when the recording spawned it with keys), each VISA resource a
stand-in answering from its channel, helper processes are not started. Its clock is virtual:
each reading returns the one recorded at the same point (``channels/clock.f8``), sleeps do not
wait, and a receive that timed out in the recording times out at once, so a 60 s power window
replays in milliseconds and every time stamp comes out bit for bit.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import sys
import tempfile
import threading
import time
from collections import deque
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from hilbench import clock
from hilbench.bounded_parse import MAX_TOML_BYTES, toml_document
from hilbench.cassette.channels import CHANNELS, CLOCK, SPAWNED, visa_hook
from hilbench.cassette.manifest import read_manifest
from hilbench.cassette.reader import Cassette, channel_files, jsonl
from hilbench.cassette.recorder import CAMPAIGN
from hilbench.cassette.standins import (
    Failures,
    ReplayMismatch,
    ReplaySocket,
    StandInAgent,
    StandInResource,
    nearest,
)
from hilbench.confined_read import confined
from hilbench.orchestrator import tap
from hilbench.wire.link_probe import LinkBound


@dataclasses.dataclass
class ReplayOutcome:
    differences: list[str]  # one line each; empty: the replay agrees with the recording
    figures: int = 0  # figures compared
    runs: int = 0
    recorded_s: float | None = None  # the recording's span on the orchestrator's clock
    replay_s: float = 0.0  # wall time of the replay
    failed_for_s: float | None = None  # from the first mismatch found to the replay's end


@dataclasses.dataclass
class StandInProcess:
    """What :func:`hilbench.orchestrator.spawn.spawn_announcing` returns in a replay: the
    recorded helper's address (a stand-in agent's, for an agent); no process runs."""

    name: str
    address: str
    agent: StandInAgent | None = None
    client_key: Any = None
    agent_key: Any = None
    log_path: Path | None = None

    def client_keys(self) -> dict[str, Any]:
        if self.client_key is None:
            return {}
        return {"key": self.client_key, "agent_key": self.agent_key}

    def stop(self, timeout_s: float = 5.0) -> None:
        return None  # the stand-in agents stop with the replay


class VirtualClock:
    """The recorded clock readings, returned in order on the thread that replays."""

    def __init__(self, readings: np.ndarray, failures: Failures) -> None:
        self.readings = readings.tolist()
        self.used = 0
        self.failures = failures
        self._owner = threading.get_ident()
        self._last = self.readings[0] if self.readings else 0.0

    def read(self) -> float:
        if threading.get_ident() != self._owner or self.failures.lines:
            return self._last  # another thread, or the replay stopping after a failure
        if self.used >= len(self.readings):
            raise self.failures.fail(f"the orchestrator read its clock more often than recorded "
                                    f"({len(self.readings)} readings): it took another path")
        self._last = self.readings[self.used]
        self.used += 1
        return self._last

    @staticmethod
    def sleep(seconds: float) -> None:
        return None  # the next reading is the recorded one: nothing to wait for


_TEXT = (str, type(None))
# What the stand-ins read of each channel's lines (header first), and its type: a line that
# holds another type is refused before the replay starts.
CHANNEL_LINES: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {
    "agent": ({"agent": str, "address": str},
              {"dir": str, "type": _TEXT, "id": _TEXT, "cmd": _TEXT, "body": (dict, type(None)),
               "arrays": list, "again": bool}),
    "visa": ({"resource": str, "options": (dict, type(None))},
             {"op": _TEXT, "args": list, "kwargs": (dict, type(None)), "error": _TEXT,
              "message": _TEXT, "error_code": (int, type(None))}),
}


def _check_lines(lines: list[dict[str, Any]], schema: tuple[dict[str, Any], dict[str, Any]],
                 where: str) -> None:
    for number, line in enumerate(lines, start=1):
        wanted = schema[0] if number == 1 else schema[1]
        for key, kind in wanted.items():
            if (key in line or number == 1) and not isinstance(line.get(key), kind):
                raise ValueError(f"{where} line {number}: {key} is {line.get(key)!r:.80}, "
                                 "not what a recording writes there")
        for ref in line.get("arrays", []) if number > 1 else ():
            if not isinstance(ref, dict) or not isinstance(ref.get("sha256"), str):
                raise ValueError(f"{where} line {number}: {ref!r:.80} is not an array "
                                 "reference")


class ReplayTap:
    """The tap of a replay: stand-ins for agents, helpers and VISA resources; the virtual
    clock."""

    def __init__(self, folder: Path, failures: Failures) -> None:
        self.folder = folder
        self.failures = failures
        files = confined(folder)
        if not files.exists(CHANNELS):
            why = _manifest_field(folder, "channels") or (
                "it was recorded without channels (before hilbench recorded them)")
            raise ValueError(f"{folder} has no {CHANNELS}/: {why}; it cannot be replayed with "
                             "stand-ins (hilbench replay --analysis-only recomputes its figures)")
        self.agents: list[tuple[dict[str, Any], list[dict[str, Any]]]] = []
        self.visa: list[tuple[dict[str, Any], list[dict[str, Any]]]] = []
        for name in channel_files(files):
            lines = [line for _, line in jsonl(files, name)]
            if not lines or name == f"{CHANNELS}/{SPAWNED}":
                continue
            header = lines[0]
            kind = header.get("channel")
            if kind in CHANNEL_LINES:
                _check_lines(lines, CHANNEL_LINES[kind], files.label(name))
                (self.agents if kind == "agent" else self.visa).append((header, lines[1:]))
        helpers = [line for _, line in jsonl(files, f"{CHANNELS}/{SPAWNED}")]
        self.spawned = deque(line for line in helpers
                             if line.get("kind") == "spawned"
                             and isinstance(line.get("name"), str)
                             and isinstance(line.get("address"), str))
        # The reference responder's bounds, in the order measured (none: recorded before it).
        self.references = deque(line["link"] for line in helpers
                                if line.get("kind") == "reference"
                                and isinstance(line.get("link"), dict))
        # Its bursts after late replies, in order (none: recorded before they were taken).
        self.reference_bursts = deque(line.get("slowest_s") for line in helpers
                                      if line.get("kind") == "reference_burst")
        # A cassette recorded before link probes (protocol 4) holds no echoes: its replay runs
        # without them, its timing checked by the rule then in force (timing_check.py).
        self.link_probes = any(line.get("cmd") == "noop" for _, lines in self.agents
                               for line in lines)
        data = files.read(f"{CHANNELS}/{CLOCK}")
        self.clock = VirtualClock(np.frombuffer(data[: len(data) - len(data) % 8], "<f8"),
                                  failures)
        self.stand_ins: dict[str, tuple[StandInAgent, list[dict[str, Any]]]] = {}  # by address
        self.sockets: list[ReplaySocket] = []
        self.resources: list[StandInResource] = []
        self._used_agents: set[int] = set()
        self._used_visa: set[int] = set()

    def _agent_channel(self, match: Any) -> tuple[str, list[dict[str, Any]]] | None:
        for i, (header, lines) in enumerate(self.agents):
            if i not in self._used_agents and match(header):
                self._used_agents.add(i)
                return str(header.get("agent")), lines
        return None

    def stand_in(self, match: Any, server_key: Any = None) -> StandInAgent | None:
        found = self._agent_channel(match)
        if found is None:
            return None
        name, lines = found
        agent = StandInAgent(name, lines, self.folder, self.failures, server_key)
        self.stand_ins[agent.address] = (agent, lines)
        return agent

    # --- the tap -------------------------------------------------------------------------
    def spawn(self, name: str, args: list[str], handover: Any) -> StandInProcess:
        recorded = next((s for s in self.spawned if s["name"] == name), None)
        if recorded is None:
            raise self.failures.fail(f"the replay starts {name}, which the recording did not "
                                    f"start; {nearest(name, [s['name'] for s in self.spawned])}")
        self.spawned.remove(recorded)
        agent = self.stand_in(lambda h: h.get("address") == recorded["address"],
                              handover[0] if handover else None)
        if agent is None:  # a meter, say: its recorded address is what the campaign passes on
            return StandInProcess(name, recorded["address"])
        return StandInProcess(name, agent.address, agent)

    def spawned(self, name: str, address: str) -> None:
        return None

    def reference_bound(self, measure: Any) -> LinkBound | None:
        """The recorded bound of the orchestrator's reference echoes, next in order; None for
        a cassette recorded before the reference (its checks then ran without one)."""
        if not self.references:
            return None
        try:
            return LinkBound.from_dict(self.references.popleft())
        except (KeyError, TypeError, ValueError) as exc:
            raise self.failures.fail(f"{CHANNELS}/{SPAWNED}: a reference bound cannot be read "
                                     f"({type(exc).__name__}: {exc})") from None

    def reference_burst(self, measure: Any) -> float | None:
        """The recorded burst of the reference's echoes, next in order; None for a cassette
        recorded before they were taken (its checks then ran without one)."""
        if not self.reference_bursts:
            return None
        slowest = self.reference_bursts.popleft()
        if type(slowest) is not float or not math.isfinite(slowest) or slowest < 0:
            raise self.failures.fail(f"{CHANNELS}/{SPAWNED}: a reference burst cannot be read "
                                     f"(slowest_s {slowest!r:.40})")
        return slowest

    def agent_socket(self, link: str, address: str, sock: Any) -> ReplaySocket:
        held = self.stand_ins.get(address)
        if held is None:
            raise self.failures.fail(f"agent {link} at {address}: no stand-in (the campaign "
                                    "reaches an agent the recording did not)")
        agent, lines = held
        replayed = ReplaySocket(sock, agent.name, lines, self.failures)
        self.sockets.append(replayed)
        return replayed

    def open_resource(self, resource: str, kwargs: dict[str, Any], opened: Any) -> Any:
        for i, (header, lines) in enumerate(self.visa):
            if i not in self._used_visa and header.get("resource") == resource:
                self._used_visa.add(i)
                standin = StandInResource(resource, lines, self.folder, self.failures)
                self.resources.append(standin)
                return standin
        held = [str(h.get("resource")) for i, (h, _) in enumerate(self.visa)
                if i not in self._used_visa]
        raise self.failures.fail(f"VISA: the driver opens {resource}, which the cassette does "
                                f"not hold (again); {nearest(resource, held)}")

    @contextlib.contextmanager
    def installed(self) -> Iterator[ReplayTap]:
        with tap.installed(self), clock.use(self.clock.read, self.clock.sleep), \
                visa_hook(self.open_resource):
            yield self

    def unused(self) -> list[str]:
        """What the cassette holds that the replay never asked for (strict mode fails on it)."""
        lines: list[str] = []
        for agent, _ in self.stand_ins.values():
            lines += agent.unused()
        for socket in self.sockets:
            lines += socket.unused()
        for resource in self.resources:
            lines += resource.unused()
        lines += [f"VISA {h.get('resource')}: recorded but never opened in the replay"
                  for i, (h, _) in enumerate(self.visa) if i not in self._used_visa]
        lines += [f"agent {h.get('agent')}: recorded but never reached in the replay"
                  for i, (h, _) in enumerate(self.agents) if i not in self._used_agents]
        left = len(self.clock.readings) - self.clock.used
        if left:
            lines.append(f"clock: {left} recorded reading(s) never taken in the replay (the "
                         "orchestrator stopped early or took another path)")
        return lines

    def close(self) -> None:
        for agent, _ in self.stand_ins.values():
            agent.stop()


class FigureCollector:
    """Runs and their figures as the replayed orchestrator emits them."""

    def __init__(self) -> None:
        self.runs: list[dict[str, Any]] = []
        self.metrics: dict[str, list[dict[str, Any]]] = {}

    def __call__(self, doc: Any) -> None:
        if doc.kind == "run_start":
            self.runs.append({"uid": doc.uid, "unit_key": doc.unit_key, "status": None})
            self.metrics[doc.uid] = []
        elif doc.kind == "run_stop":
            for run in self.runs:
                if run["uid"] == doc.run_uid:
                    run["status"] = doc.exit_status
        elif doc.kind == "metric":
            self.metrics.setdefault(doc.run_uid, []).append(
                {"name": doc.name, "value": doc.value, "unit": doc.unit,
                 "uncertainty": doc.uncertainty})


def recorded_figures(cassette: Cassette) -> tuple[list[dict[str, Any]], dict[str, list]]:
    runs: list[dict[str, Any]] = []
    metrics: dict[str, list[dict[str, Any]]] = {}
    for doc in cassette.documents():
        if doc.get("kind") == "run_start":
            runs.append({"uid": doc["uid"], "unit_key": doc["unit_key"], "status": None})
            metrics[doc["uid"]] = []
        elif doc.get("kind") == "run_stop":
            for run in runs:
                if run["uid"] == doc["run_uid"]:
                    run["status"] = doc["exit_status"]
        elif doc.get("kind") == "metric":
            metrics.setdefault(doc["run_uid"], []).append(doc)
    return runs, metrics


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return (type(a) is type(b) and a == b) or (
        isinstance(a, (int, float)) and isinstance(b, (int, float)) and a == b)


def _compare_run(label: str, recorded: list[dict], replayed: list[dict]) -> list[str]:
    """One line per figure of one run that differs, is missing or is new in the replay."""
    lines: list[str] = []
    mine = {m["name"]: m for m in replayed}
    for figure in recorded:
        other = mine.pop(figure["name"], None)
        if other is None:
            lines.append(f"{label}: {figure['name']} = {figure.get('value')!r} recorded, not "
                         "computed in the replay")
            continue
        for key in ("value", "uncertainty", "unit"):
            if not _same(figure.get(key), other.get(key)):
                lines.append(f"{label}: {figure['name']} {key}: {figure.get(key)!r} "
                             f"recorded, {other.get(key)!r} replayed")
    for name, other in mine.items():
        lines.append(f"{label}: {name} = {other['value']!r} replayed, not in the recording")
    return lines


def compare_figures(recorded: tuple[list, dict], replayed: FigureCollector) -> tuple[list[str],
                                                                                      int]:
    """One line per figure (or run) that differs; and how many figures were compared."""
    runs, metrics = recorded
    lines: list[str] = []
    compared = 0
    for i, run in enumerate(runs):
        label = f"run {i + 1} ({run['unit_key']})"
        if i >= len(replayed.runs):
            lines.append(f"{label}: recorded, not run in the replay")
            continue
        again = replayed.runs[i]
        if again["unit_key"] != run["unit_key"]:
            lines.append(f"{label}: the replay ran {again['unit_key']} in its place")
            continue
        if again["status"] != run["status"]:
            lines.append(f"{label}: status {run['status']} recorded, {again['status']} replayed")
        figures = metrics.get(run["uid"], [])
        compared += len(figures)
        lines += _compare_run(label, figures, replayed.metrics.get(again["uid"], []))
    for again in replayed.runs[len(runs):]:
        lines.append(f"the replay ran {again['unit_key']} beyond the recorded runs")
    return lines, compared


def load_recorded_campaign(folder: Path, *, stand_ins: bool = False) -> Any:
    """The campaign as recorded, read as if from where it was (relative paths resolve there,
    or in the cassette when that folder is gone). ``stand_ins``: a spawned agent's ``python``
    (another environment, e.g. a vendor SDK's) is not needed, as its stand-in replaces it."""
    from hilbench.orchestrator.gate import gate_document

    files = confined(folder)
    if not files.exists(CAMPAIGN):
        raise ValueError(f"{folder} holds no {CAMPAIGN}: recorded by an older hilbench, it "
                         "cannot be replayed")
    path = files.label(CAMPAIGN)
    source = read_manifest(files).get("campaign_path")
    if not isinstance(source, str) or not source or not Path(source).parent.is_dir():
        source = path
    data = toml_document(files.read(CAMPAIGN, max_bytes=MAX_TOML_BYTES), path)
    if stand_ins:
        for agent in data.get("agents", []):
            if isinstance(agent, dict) and "python" in agent:
                agent["python"] = sys.executable
    return gate_document(data, source).campaign  # the gate `hilbench run` passed


def _replay_session(campaign: Any, replay_tap: ReplayTap, collector: FigureCollector,
                    failures: Failures) -> str | None:
    """Run the campaign against the stand-ins through the one session runner, into a scratch
    store; the lost agent's or instrument's message if it stopped so (the recording may have
    too: compared later), None otherwise. A stop signal propagates; other ends are failures."""
    from hilbench.orchestrator.interrupt import Interrupted
    from hilbench.orchestrator.session import Outcome, run_session

    def wire(runner: Any) -> None:
        runner.extra_consumers = [collector]
        runner.lock_bench = False

    with tempfile.TemporaryDirectory(prefix="hilbench-replay-") as tmp, replay_tap.installed():
        try:
            ended = run_session(campaign, Path(tmp) / "replay.sqlite", wire, again=True)
        except ReplayMismatch:
            return None  # in failures already
        except Exception as exc:
            if not failures.lines:
                failures.add(f"the replay stopped: {type(exc).__name__}: {exc}")
            return None
    if ended.outcome in (Outcome.COMPLETED, Outcome.FAILED_RUNS):
        return None
    if ended.outcome is Outcome.INTERRUPTED:
        raise Interrupted((ended.signal_exit or 130) - 128)
    if ended.outcome in (Outcome.AGENT_LOST, Outcome.INSTRUMENT_LOST):
        return ended.message
    if not failures.lines:
        failures.add(f"the replay stopped: {ended.outcome.value}: {ended.message}")
    return None


def replay_cassette(folder: str | Path, *, strict: bool = True) -> ReplayOutcome:
    """Run the cassette's campaign against stand-ins and compare every figure."""
    folder = Path(folder)
    started = time.monotonic()
    cassette = Cassette(folder)
    recorded = recorded_figures(cassette)
    if not recorded[0]:
        raise ValueError("the recording holds no run (its campaign did not start, or stopped "
                         "before its first run): there is nothing to replay")
    campaign = load_recorded_campaign(folder, stand_ins=True)
    failures = Failures()
    replay_tap = ReplayTap(folder, failures)
    collector = FigureCollector()
    stopped: str | None = None
    try:
        try:
            campaign = _to_stand_ins(campaign, replay_tap)
        except (KeyError, TypeError, AttributeError) as exc:  # a channel's line, not a bug
            raise ValueError(f"{folder}: an agent channel cannot be played back "
                             f"({type(exc).__name__}: {exc})") from None
        stopped = _replay_session(campaign, replay_tap, collector, failures)
    finally:
        replay_tap.close()
    differences = list(dict.fromkeys(failures.lines))
    if not differences:
        lines, compared = compare_figures(recorded, collector)
        differences += lines
        if strict:
            differences += replay_tap.unused()
    else:
        compared = 0
    if stopped and differences:
        differences.append(f"(the replayed campaign stopped: {stopped})")
    readings = replay_tap.clock.readings
    ended = time.monotonic()
    return ReplayOutcome(differences, compared, len(collector.runs),
                         readings[-1] - readings[0] if readings else None, ended - started,
                         None if failures.first_at is None else ended - failures.first_at)


def _to_stand_ins(campaign: Any, replay_tap: ReplayTap) -> Any:
    """Agents the campaign reaches at an address are reached at their stand-ins instead (with
    no key: the stand-in holds none); spawned ones get theirs when the runner spawns them."""
    agents = []
    for spec in campaign.agents:
        if spec.connects:
            raise ValueError(f"agent {spec.id} dials in (connect = true): replaying agents "
                             "that connect to the orchestrator is not supported")
        if spec.spawn:
            agents.append(spec)
            continue
        agent = replay_tap.stand_in(lambda h, sid=spec.id: h.get("agent") == sid)
        if agent is None:
            raise ValueError(f"agent {spec.id}: the cassette holds no channel for it")
        agents.append(dataclasses.replace(spec, address=agent.address, key=None))
    return dataclasses.replace(campaign, agents=tuple(agents))


def _manifest_field(folder: Path, key: str) -> str | None:
    """One field of the cassette's manifest, None when it or the manifest is missing."""
    try:
        value = read_manifest(folder).get(key)
    except (OSError, ValueError):
        return None
    return value if isinstance(value, str) else None
