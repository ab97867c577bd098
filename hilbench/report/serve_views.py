"""What `hilbench serve`'s pages show, as plain values for their templates: the daemon's status
as sections (campaign, unit, progress, ETA and its basis, agents, instruments, last error,
queue, schedules), a campaign's runs with the reason of each that did not succeed, one run's
phases, events and figures, and times in the server's timezone with the zone named.

The status is what ``hilbench status --json`` prints (the daemon's own word, ETA included:
:mod:`hilbench.orchestrator.eta` made it); every field is read defensively, as a page must
render whatever an older or newer daemon stored.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from hilbench.orchestrator.eta import duration_text
from hilbench.store import Store

# An event's data longer than this is folded under its first characters.
FOLD_CHARS = 120
# A run page lists at most this many events (a long run stores thousands); the count says so.
MAX_EVENTS = 500
# The campaign page lists every run that did not succeed (up to this many) and the newest runs.
MAX_PROBLEM_RUNS = 500
LATEST_RUNS = 50
NOT_SUCCESS = ("fail", "unverified", "abort")


def _zone(moment: time.struct_time) -> str:
    offset = time.strftime("%z", moment)
    name = time.strftime("%Z", moment) or f"UTC{offset}"
    return name if offset == "+0000" or name == f"UTC{offset}" else f"{name} (UTC{offset})"


def local_time(seconds: Any) -> str:
    """``seconds`` (epoch) in the server's timezone, the zone named (``2026-11-29 09:01:02
    CET (UTC+0100)``, ``… UTC`` on a UTC server); ``-`` for nothing."""
    if not isinstance(seconds, int | float) or isinstance(seconds, bool):
        return "-"
    try:
        moment = time.localtime(float(seconds))
    except (OverflowError, OSError, ValueError):
        return "-"
    return f"{time.strftime('%Y-%m-%d %H:%M:%S', moment)} {_zone(moment)}"


def server_zone() -> str:
    """The server's timezone as the pages name it (now: abbreviation and offset)."""
    return _zone(time.localtime())


def _text(value: Any) -> str:
    return "" if value is None else str(value)


def _dict(value: Any) -> dict[str, Any]:
    return dict(value) if isinstance(value, Mapping) else {}


def _list(value: Any) -> list[Any]:
    return list(value) if isinstance(value, list) else []


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def daemon_running(status: Mapping[str, Any]) -> bool:
    """The daemon answered and is not stopped (``hilbench status --json``'s daemon.state)."""
    if not status.get("available"):
        return False
    state = _dict(_dict(status.get("status")).get("daemon")).get("state")
    return state not in (None, "not running", "stopped")


def _current(current: dict[str, Any]) -> dict[str, Any] | None:
    if not current:
        return None
    eta = _number(current.get("eta_s"))
    done, total = _number(current.get("done")), _number(current.get("total"))
    last = _dict(current.get("last_unit"))
    return {
        "name": _text(current.get("name") or current.get("campaign")),
        "campaign_uid": _text(current.get("campaign_uid")),
        "item": _text(current.get("item")),
        "unit": _text(current.get("unit")) or "-",
        "progress": (f"{done:.0f} of {total:.0f} unit(s)" if done is not None and total
                     else "-"),
        "failed": _text(current.get("failed") or 0),
        "unverified": _text(current.get("unverified") or 0),
        "started": local_time(current.get("started_at")),
        "eta": duration_text(eta) if eta is not None else "unknown",
        "eta_at": local_time(time.time() + eta) if eta is not None else "-",
        "eta_basis": _text(current.get("eta_basis")) or "-",
        "last_unit": ({"key": _text(last.get("key")), "status": _text(last.get("status")),
                       "run_uid": _text(last.get("run_uid"))} if last else None),
    }


def _agent(a: dict[str, Any]) -> dict[str, str]:
    off, unc = _number(a.get("clock_offset_s")), _number(a.get("clock_offset_uncertainty_s"))
    heard = _number(a.get("last_heard_s_ago"))
    return {"id": _text(a.get("id")), "driver": _text(a.get("driver")),
            "host": _text(a.get("host")), "address": _text(a.get("address")),
            "heard": f"{heard:.1f} s ago" if heard is not None else "-",
            "clock": (f"{off * 1e3:+.3f} ± {(unc or 0.0) * 1e3:.3f} ms" if off is not None
                      else "not measured yet")}


def _instrument(i: dict[str, Any]) -> dict[str, str]:
    last = _number(i.get("last_reading"))
    return {"id": _text(i.get("id")), "identity": _text(i.get("identity")),
            "resource": _text(i.get("resource")),
            "last": (f"{time.time() - last:.1f} s ago ({local_time(last)})" if last
                     else "none yet")}


def _schedule(s: dict[str, Any]) -> dict[str, Any]:
    return {"id": _text(s.get("id")), "name": _text(s.get("name")),
            "cron": _text(s.get("cron")), "tz": _text(s.get("tz")),
            "next": [local_time(t) for t in _list(s.get("next"))]}


def status_view(status: Mapping[str, Any]) -> dict[str, Any]:
    """The daemon's status as the pages' sections, and the whole JSON for the folded block."""
    current = _dict(status.get("status"))
    daemon = _dict(current.get("daemon"))
    queue = _dict(current.get("queue"))
    return {
        "status": status,
        "daemon": {"state": _text(daemon.get("state")) or "unknown",
                   "detail": _text(daemon.get("detail")),
                   "pid": _text(daemon.get("pid")), "host": _text(daemon.get("host"))},
        "running": daemon_running(status),
        "current": _current(_dict(current.get("current"))),
        "agents": [_agent(_dict(a)) for a in _list(current.get("agents"))],
        "instruments": [_instrument(_dict(i)) for i in _list(current.get("instruments"))],
        "last_error": _text(current.get("last_error")),
        "queue_length": _text(queue.get("length", "-")),
        "queue_head": [{"id": _text(_dict(i).get("id")), "name": _text(_dict(i).get("name")),
                        "state": _text(_dict(i).get("state"))}
                       for i in _list(queue.get("head"))],
        "schedules": [_schedule(_dict(s)) for s in _list(current.get("schedules"))],
        "status_json": json.dumps(current, indent=1, ensure_ascii=False, default=str),
        "zone": server_zone(),
    }


def _run_row(run: Mapping[str, Any]) -> dict[str, Any]:
    return {"uid": run["uid"], "unit_key": run["unit_key"], "status": run["status"],
            "duration": (f"{run['duration_s']:.3f} s" if run.get("duration_s") is not None
                         else "-"),
            "reason": _text(run.get("reason")), "started": local_time(run.get("wall_time"))}


def campaign_runs_view(db_path: Path, campaign_uid: str) -> dict[str, Any]:
    """The campaign's runs that did not succeed, each with its reason, and its newest runs."""
    with Store(db_path) as store:
        runs = store.campaign_runs(campaign_uid)
    problems = [r for r in runs if r["status"] in NOT_SUCCESS]
    counts: dict[str, int] = {}
    for run in runs:
        counts[run["status"]] = counts.get(run["status"], 0) + 1
    return {"problem_runs": [_run_row(r) for r in problems[:MAX_PROBLEM_RUNS]],
            "problems_left_out": max(0, len(problems) - MAX_PROBLEM_RUNS),
            "latest_runs": [_run_row(r) for r in reversed(runs[-LATEST_RUNS:])],
            "run_counts": sorted(counts.items())}


def _fold(data: Any) -> dict[str, Any]:
    text = json.dumps(data, ensure_ascii=False, default=str, sort_keys=True)
    if len(text) <= FOLD_CHARS:
        return {"short": text, "long": ""}
    return {"short": text[:FOLD_CHARS] + " …",
            "long": json.dumps(data, ensure_ascii=False, default=str, indent=1,
                               sort_keys=True)}


def _since(t: Any, t0: float | None) -> str:
    t = _number(t)
    return f"{t - t0:.4f} s" if t is not None and t0 is not None else "-"


def _metric_source(meta: Mapping[str, Any], t0: float | None) -> str:
    """Where a figure comes from, in a few words: its stated source, or its window."""
    parts = [f"{key}: {_text(meta[key])}" for key in ("source", "instrument", "label")
             if meta.get(key)]
    window = meta.get("window")
    if isinstance(window, list) and len(window) == 2:
        parts.append(f"window {_since(window[0], t0)} .. {_since(window[1], t0)}")
    windows = meta.get("windows")
    if isinstance(windows, list) and windows:
        parts.append(f"{len(windows)} window(s)")
    return "; ".join(parts)


def run_view(db_path: Path, run_uid: str) -> dict[str, Any]:
    """One run: what it is, its phases, events (long data folded), figures with their
    uncertainty and source, and its power sources."""
    with Store(db_path) as store:
        run = store.run(run_uid)
        campaign = store.campaign(run["campaign_uid"]) if run["campaign_uid"] else None
        phases = store.phases(run_uid)
        events = store.events(run_uid)
        metrics = store.metrics(run_uid)
        sources = store.sample_sources(run_uid)
    t0 = _number(run.get("t_start"))
    names = {p["uid"]: p["name"] for p in phases}
    return {
        "run": run, "campaign": campaign,
        "started": local_time(run.get("wall_time")),
        "duration": (f"{run['duration_s']:.4f} s" if run.get("duration_s") is not None
                     else "still running" if run["status"] == "incomplete" else "-"),
        "phases": [{"name": p["name"], "start": _since(p["t_start"], t0),
                    "duration": (f"{p['duration_s']:.4f} s" if p["duration_s"] is not None
                                 else "-"),
                    "status": p["status"], "reason": _text(p["reason"])} for p in phases],
        "events": [{"t": _since(e["t"], t0), "phase": names.get(e["phase_uid"], "-"),
                    "name": e["name"], **_fold(e["data"])} for e in events[:MAX_EVENTS]],
        "events_left_out": max(0, len(events) - MAX_EVENTS),
        "metrics": [{"name": m["name"],
                     "value": "-" if m["value"] is None else f"{m['value']:.6g}",
                     "uncertainty": ("-" if m["uncertainty"] is None
                                     else f"± {m['uncertainty']:.2g}"),
                     "unit": _text(m["unit"]),
                     "source": _metric_source(_dict(m["meta"]), t0),
                     "reason": _text(_dict(m["meta"]).get("reason")),
                     **_fold(m["meta"] or {})} for m in metrics],
        "sources": [{"source": s["source"], "unit": s["unit"], "n": s["n"],
                     "span": (f"{s['t_last'] - s['t_first']:.3f} s"
                              if s["t_first"] is not None and s["t_last"] is not None
                              else "-")} for s in sources],
        "running": run["status"] == "incomplete",
    }


def live_run(db_path: Path, campaign_uid: str | None = None) -> dict[str, Any] | None:
    """The run going on now: the newest run without a status, of ``campaign_uid`` if given,
    else of the newest campaign still incomplete; None when nothing runs."""
    with Store(db_path) as store:
        if campaign_uid:
            uids = [campaign_uid]
        else:
            uids = [c["uid"] for c in reversed(store.campaigns())
                    if c["status"] == "incomplete"][:1]
        for uid in uids:
            for run in reversed(store.campaign_runs(uid)):
                if run["status"] == "incomplete":
                    return run
    return None
