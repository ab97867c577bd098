"""The daemon ↔ worker messages, typed: one JSON object per line, tagged by ``event``.

The worker writes :data:`Report` lines on stdout; the daemon decodes each with
:class:`ReportReader`, which validates it against these Structs. A line that is not one of
them (a library printing to stdout, a truncated write, a newer worker) is logged and counted,
never trusted and never fatal. The daemon sends :data:`Command` lines on the worker's stdin.
"""

from __future__ import annotations

import logging
import time
from typing import Any

import msgspec

from hilbench.orchestrator.session import SessionOutcome

log = logging.getLogger(__name__)

MAX_LINE = 1 << 20  # a report line longer than this is not read (a runaway writer)


class _Msg(msgspec.Struct, tag_field="event", forbid_unknown_fields=True, kw_only=True):
    t: float = msgspec.field(default_factory=time.time)


class CampaignStarted(_Msg, tag="campaign"):
    """The item's campaign is known (before its first unit); ``plan``: [procedure, unit group,
    units left, expected slot s or None, stored runs (0: the model's slot)] per kind of unit
    still to run (hilbench.orchestrator.eta.plan_entries)."""

    uid: str
    total: int
    done: int
    plan: list[tuple[str, str, int, float | None, int]]
    message: str


class UnitStarted(_Msg, tag="unit_start"):
    key: str
    procedure: str
    run_uid: str


class UnitEnded(_Msg, tag="unit"):
    key: str
    procedure: str
    run_uid: str
    status: str
    duration_s: float
    reason: str = ""


class AgentHealth(msgspec.Struct, forbid_unknown_fields=True):
    id: str
    host: str | None = None
    driver: str | None = None
    address: str | None = None
    agent_id: str | None = None
    last_heard_s_ago: float | None = None
    clock_offset_s: float | None = None
    clock_offset_uncertainty_s: float | None = None


class InstrumentHealth(msgspec.Struct, forbid_unknown_fields=True):
    id: str
    identity: str | None = None
    driver: str | None = None
    resource: str | None = None
    last_reading: float | None = None
    simulated: bool = False


class Health(_Msg, tag="health"):
    agents: list[AgentHealth]
    instruments: list[InstrumentHealth]


class Ended(_Msg, tag="end"):
    """The worker's last word: the session's typed outcome."""

    session: SessionOutcome


Report = CampaignStarted | UnitStarted | UnitEnded | Health | Ended


class RunItem(msgspec.Struct, tag_field="command", tag="item", forbid_unknown_fields=True):
    """Daemon → spare worker: run this queue item."""

    id: int


class Pause(msgspec.Struct, tag_field="command", tag="pause", forbid_unknown_fields=True):
    """Daemon → worker: stop after the unit in progress."""


Command = RunItem | Pause

_report_encoder = msgspec.json.Encoder()
_report_decoder = msgspec.json.Decoder(Report)
_command_decoder = msgspec.json.Decoder(Command)


def encode(message: Report | Command) -> str:
    """One line of JSON (no newline)."""
    return _report_encoder.encode(message).decode()


def decode_command(line: str) -> Command | None:
    """A command line from the daemon; None (logged) for anything else."""
    try:
        return _command_decoder.decode(line)
    except (msgspec.ValidationError, msgspec.DecodeError) as exc:
        log.warning("worker: ignoring a command line that is not one: %.120r (%s)", line, exc)
        return None


class ReportReader:
    """Decodes the worker's lines on the daemon's side; counts and logs the bad ones."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.rejected = 0

    def decode(self, line: str) -> Report | None:
        if len(line) > MAX_LINE:
            return self._reject(line, f"longer than {MAX_LINE} characters")
        if not line.strip():
            return None
        try:
            return _report_decoder.decode(line)
        except (msgspec.ValidationError, msgspec.DecodeError) as exc:
            return self._reject(line, str(exc))

    def _reject(self, line: str, why: str) -> None:
        self.rejected += 1
        log.warning("worker %d sent a line that is not a report (%s; %d so far): %.200s",
                    self.pid, why, self.rejected, line)
        return None


def health_dict(report: Health) -> dict[str, Any]:
    """As `hilbench status --json` shows agents and instruments."""
    return msgspec.to_builtins({"agents": report.agents, "instruments": report.instruments})
