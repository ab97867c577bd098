"""`hilbench daemon`, `hilbench status` and `hilbench systemd`."""

from __future__ import annotations

import json
import logging
import os
import socket
import sys
import time
from pathlib import Path
from typing import Any

import click

from hilbench.cli import EXIT_UNREACHABLE, EXIT_USAGE
from hilbench.cli.options import DB_OPTION as _DB_OPTION
from hilbench.cli.options import db_path as _db_path

_CONFIG = click.option(
    "--config", "config_path", type=click.Path(exists=True, dir_okay=False, path_type=Path),
    default=None, help="Daemon configuration (TOML; see README 'Daemon').",
)


def _config(config_path: Path | None):
    from hilbench.daemon.config import ConfigError, load_config

    try:
        return load_config(config_path)
    except ConfigError as exc:
        for line in str(exc).splitlines():
            click.echo(f"{click.style('error:', fg='red')} {line}", err=True)
        raise SystemExit(EXIT_USAGE) from None


@click.command()
@_CONFIG
@_DB_OPTION
@click.option("--control", default=None,
              help="Control socket address [default: the config's, else tcp://127.0.0.1:5650]; "
                   "tcp://127.0.0.1:* picks a free port (written to the store for `status`).")
def daemon(config_path: Path | None, db: Path | None, control: str | None) -> None:
    """Run queued campaigns one at a time, fire schedules, answer `hilbench status`.

    One daemon per bench host (by hand, or under systemd: `hilbench systemd`). Each queue item
    runs in a worker process with the runner, resume rule and exit codes of `hilbench run`; a
    bench's agents and instruments belong to one campaign at a time, so a `hilbench run` by
    hand meanwhile is refused (and the daemon waits while one holds the bench). SIGTERM stops
    the run in progress (marked aborted) and the daemon; the next start resumes it. After a
    SIGKILL, the next start resumes the campaign too: every unit once.

    Logs: STORE.logs/daemon.log, STORE.logs/worker.log, and the campaign logs beside them.
    """
    from hilbench.daemon.control import ControlError
    from hilbench.daemon.manager import Daemon, DaemonError
    from hilbench.store import StoreError
    from hilbench.store.paths import logs_dir

    config = _config(config_path)
    if control is not None:
        config.daemon.control = control
    store = db if db is not None else (config.daemon.store or _db_path(None))
    logs = logs_dir(Path(store).resolve())
    logs.mkdir(mode=0o700, parents=True, exist_ok=True)
    handler = logging.FileHandler(logs / "daemon.log", encoding="utf-8")
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    handler.setLevel(logging.INFO)
    root = logging.getLogger()
    root.addHandler(handler)
    root.setLevel(min(root.level or logging.WARNING, logging.INFO))
    for h in root.handlers:
        if h is not handler and h.level == logging.NOTSET:
            h.setLevel(logging.WARNING)  # the terminal keeps -v's level; the file gets info
    try:
        d = Daemon(config, Path(store))
    except (DaemonError, ControlError, StoreError, ValueError, OSError) as exc:
        click.echo(f"{click.style('error:', fg='red')} {exc}", err=True)
        raise SystemExit(EXIT_USAGE) from None
    raise SystemExit(d.run())


def fetch_status(db: Path, connect: str | None, key: Path | None,
                 daemon_key: Path | None, timeout_s: float = 2.0) -> dict[str, Any]:
    """The daemon's status, or what the store says when no daemon answers."""
    from hilbench.daemon.control import ControlError, request

    if connect is None:
        from hilbench.daemon.queue_db import QueueDB

        with QueueDB(db) as q:
            info = q.daemon_info()
        connect = info.get("control")
        if connect is None:
            return _offline(db, "no daemon has run on this store")
        if info.get("host") == socket.gethostname() and not _alive(info.get("pid")):
            return _offline(db, f"the daemon of this store (pid {info.get('pid')}) has exited")
    try:
        public = None
        if daemon_key is not None:
            from hilbench.wire.keys import load_public

            public = load_public(daemon_key)
        return request(connect, "status", timeout_s=timeout_s, key=key, daemon_key=public)
    except ControlError as exc:
        if key is not None:
            raise
        return _offline(db, str(exc))


def _alive(pid: int | None) -> bool:
    if not pid:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process: alive
        return True
    return True


def _offline(db: Path, why: str) -> dict[str, Any]:
    from hilbench.daemon.queue_db import QueueDB

    with QueueDB(db) as q:
        items = q.items()
        history = q.history(1)
    return {
        "daemon": {"state": "not running", "detail": why, "store": str(db)},
        "current": None, "agents": [], "instruments": [],
        "last_error": history[0]["message"] if history and history[0]["exit_status"] == "failed"
        else "",
        "queue": {"length": len(items), "head": [i.summary() for i in items[:5]]},
        "schedules": [],
    }


def _ago(t: float | None) -> str:
    return "-" if not t else f"{time.time() - t:.1f} s ago"


def render(status: dict[str, Any]) -> str:
    d = status["daemon"]
    lines = [f"daemon: {d['state']}" + (f" ({d['detail']})" if d.get("detail") else "")
             + (f", pid {d['pid']} on {d['host']}" if d.get("pid") else "")]
    c = status.get("current")
    if c:
        eta = f"{c['eta_s']:.0f} s" if c.get("eta_s") is not None else "unknown"
        lines.append(f"campaign: {c['name']} (item {c['item']}, campaign "
                     f"{(c['campaign_uid'] or '-')[:8]}): {c['done']}/{c['total']} units, "
                     f"{c['failed']} failed; unit {c['unit'] or '-'}; ETA {eta}")
        lines.append(f"  ETA based on: {c['eta_basis']}")
    for a in status.get("agents", []):
        off = a.get("clock_offset_s")
        clock = (f"{off * 1e3:+.3f} ± {a['clock_offset_uncertainty_s'] * 1e3:.3f} ms"
                 if off is not None else "not measured yet")
        lines.append(f"agent {a['id']}: {a['driver']} on {a['host']} ({a['address']}), "
                     f"last heard {a['last_heard_s_ago']:.1f} s ago, clock offset {clock}")
    for i in status.get("instruments", []):
        lines.append(f"instrument {i['id']}: {i['identity']} ({i['resource']}), last reading "
                     f"{_ago(i.get('last_reading'))}")
    if status.get("last_error"):
        lines.append(f"last error: {status['last_error']}")
    q = status["queue"]
    head = ", ".join(f"{i['id']} {i['name']} ({i['state']})" for i in q["head"]) or "empty"
    lines.append(f"queue: {q['length']} item(s): {head}")
    for s in status.get("schedules", []):
        nxt = ", ".join(time.strftime("%Y-%m-%d %H:%M", time.localtime(t)) for t in s["next"])
        lines.append(f"schedule {s['id']} {s['name']} {s['cron']!r} ({s['tz']}): next {nxt}")
    return "\n".join(lines)


@click.command()
@_DB_OPTION
@click.option("--json", "as_json", is_flag=True, help="The status as one JSON object.")
@click.option("--watch", is_flag=True, help="Redraw every --interval seconds until Ctrl-C.")
@click.option("--interval", type=click.FloatRange(min=0.2), default=2.0, show_default=True)
@click.option("--connect", default=None,
              help="The daemon's control address [default: the one in the store].")
@click.option("--key", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              default=None, help="Our CurveZMQ secret key (the daemon must list its public key).")
@click.option("--daemon-key", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              default=None, help="The daemon's public key file.")
def status(db: Path | None, as_json: bool, watch: bool, interval: float, connect: str | None,
           key: Path | None, daemon_key: Path | None) -> None:
    """What the daemon is doing: state, campaign and unit, progress and ETA, agents and
    instruments, the last error, the queue head and the next schedule fires.

    Exit status 3 when a daemon given with --connect does not answer.
    """
    from hilbench.daemon.control import ControlError

    db = _db_path(db)
    while True:
        try:
            current = fetch_status(db, connect, key, daemon_key)
        except ControlError as exc:
            click.echo(f"{click.style('error:', fg='red')} {exc}", err=True)
            raise SystemExit(EXIT_UNREACHABLE) from None
        text = json.dumps(current, indent=2, default=str) if as_json else render(current)
        if not watch:
            click.echo(text)
            return
        click.clear()
        click.echo(text)
        sys.stdout.flush()
        try:
            time.sleep(interval)
        except KeyboardInterrupt:
            return


@click.command()
@_CONFIG
@click.option("--campaign", "campaigns", multiple=True,
              type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="Also print a unit for each agent of this campaign that hilbench does not "
                   "spawn (repeatable).")
@click.option("--keys-dir", default="/etc/hilbench/keys", show_default=True,
              help="Where the agent hosts keep their keys.")
@click.option("--user", "service_user", default="hilbench", show_default=True)
@click.option("--watchdog-s", type=click.IntRange(min=5), default=60, show_default=True)
def systemd(config_path: Path | None, campaigns: tuple[Path, ...], keys_dir: str,
            service_user: str, watchdog_s: int) -> None:
    """Print systemd unit files: the daemon (Type=notify, watchdog, restart on failure) and
    one per network agent of the given campaigns, with its keys.

    Save each block under /etc/systemd/system/ with the name in its first comment line, then
    `systemctl daemon-reload && systemctl enable --now NAME`.
    """
    from hilbench.daemon.systemd import agent_unit, daemon_unit
    from hilbench.orchestrator.campaign import CampaignError, load_campaign

    click.echo(daemon_unit(config_path, service_user, watchdog_s))
    for path in campaigns:
        try:
            campaign = load_campaign(path)
        except CampaignError as exc:
            click.echo(f"{click.style('error:', fg='red')} {exc}", err=True)
            raise SystemExit(EXIT_USAGE) from None
        for spec in campaign.agents:
            if not spec.spawn:
                click.echo(agent_unit(spec, campaign, keys_dir, service_user))
