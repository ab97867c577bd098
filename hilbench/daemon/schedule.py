"""Cron schedules: when a schedule fires, and what happens to fires the daemon missed.

Fire times come from cronsim (the parser healthchecks.io runs), evaluated in the schedule's
time zone, so daylight-saving changes follow cron's rules: a time skipped by the spring change
fires once at the first valid minute after it, an hour repeated in autumn fires once for a
daily job. The planner is a pure function of (schedule, now, when the daemon started), so tests
drive it with any clock.

Policy for fires that fell while the daemon was down (``--missed``): ``skip`` records them and
queues nothing; ``run-once`` records them and queues one item for all of them.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from cronsim import CronSim, CronSimError

MISSED_POLICIES = ("skip", "run-once")
MAX_RECORDED = 100  # fires recorded one by one per tick; more are summed up in one note


class ScheduleError(ValueError):
    """A cron expression, time zone or policy that cannot be used; the message says which."""


def check(cron: str, tz: str, missed: str) -> None:
    zone = _zone(tz)
    try:
        CronSim(cron, datetime.now(zone))
    except CronSimError as exc:
        raise ScheduleError(f"cron expression {cron!r}: {exc}") from None
    if missed not in MISSED_POLICIES:
        raise ScheduleError(f"--missed must be one of {MISSED_POLICIES}, got {missed!r}")


def _zone(tz: str) -> ZoneInfo:
    try:
        return ZoneInfo(tz)
    except (ZoneInfoNotFoundError, ValueError):
        raise ScheduleError(
            f"unknown time zone {tz!r} (an IANA name, e.g. Europe/Berlin)"
        ) from None


def fires_after(cron: str, tz: str, after: float, count: int) -> list[float]:
    """The next ``count`` fire times strictly after ``after`` (UTC seconds)."""
    return [t for t, _ in zip(_iter(cron, tz, after), range(count), strict=False)]


def _iter(cron: str, tz: str, after: float):
    zone = _zone(tz)
    start = datetime.fromtimestamp(after, timezone.utc).astimezone(zone)
    for dt in CronSim(cron, start):
        t = dt.timestamp()
        if t > after:
            yield t


@dataclass(frozen=True)
class Plan:
    """What one tick does for one schedule."""

    fires: list[tuple[float, str, str]]  # (fire time, outcome, note) to record
    last_fire: float  # every fire up to here is handled
    queue_item: bool


def plan(cron: str, tz: str, missed: str, last_fire: float, now: float,
         daemon_started: float) -> Plan | None:
    """The fires due in (last_fire, now]; None when there are none. A fire before the daemon
    started was missed (the daemon was down) and follows ``missed``; later fires queue an item
    (one per tick; several due at once — a stalled clock — are coalesced into it)."""
    due: list[float] = []
    for t in _iter(cron, tz, last_fire):
        if t > now:
            break
        due.append(t)
    if not due:
        return None
    missed_fires = [t for t in due if t < daemon_started]
    on_time = [t for t in due if t >= daemon_started]
    fires: list[tuple[float, str, str]] = []
    if missed_fires:
        note = "the daemon was not running"
        shown = missed_fires[-MAX_RECORDED:]
        if len(missed_fires) > len(shown):
            note += f" ({len(missed_fires) - len(shown)} earlier missed fires not listed)"
        if missed == "run-once" and not on_time:
            fires += [(t, "missed", f"{note}; run once (policy run-once)") for t in shown[:-1]]
            fires.append((shown[-1], "queued",
                          f"run once for {len(missed_fires)} missed fire(s) (policy run-once)"))
        else:
            why = "skipped (policy skip)" if missed == "skip" else "covered by the on-time fire"
            fires += [(t, "missed", f"{note}; {why}") for t in shown]
    if on_time:
        fires.append((on_time[0], "queued", ""))
        fires += [(t, "coalesced", "due in the same tick as an earlier fire") for t in on_time[1:]]
    return Plan(fires, due[-1], any(o == "queued" for _, o, _ in fires))
