"""`hilbench daemon` and `hilbench status` (`hilbench systemd`: :mod:`hilbench.cli.systemd`)."""

from __future__ import annotations

import json
import logging
import socket
import sys
import time
from pathlib import Path
from typing import Any

import click

from hilbench.cli import EXIT_UNREACHABLE, EXIT_USAGE
from hilbench.cli.options import DB_OPTION as _DB_OPTION
from hilbench.cli.options import db_path as _db_path
from hilbench.cli.options import existing_store, store_failed, store_named
from hilbench.lifeline import pid_alive

_CONFIG = click.option(
    "--config", "config_path", type=click.Path(exists=True, dir_okay=False, path_type=Path),
    default=None, help="Daemon configuration (TOML; see the manual, docs/operation/daemon.md).",
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
              help="Control socket address [default: the config's, else ipc://STORE.logs/"
                   "control.sock, which only the owner (and [daemon] group) can open]; it is "
                   "written to the store for `status`. A plaintext TCP address (loopback) "
                   "answers only ping unless the config says insecure = true.")
@click.option("--bench", default=None,
              help="The bench this daemon serves [default: the config's, else the host name]: "
                   "it runs the queue's items for this bench (and those for any bench).")
@click.option("--queue", "queue_url", default=None, metavar="URL",
              help="A queue shared by several benches (postgresql://…) [default: the config's, "
                   "else the store file's own queue].")
@click.option("--push-to", "push_to", default=None, metavar="URL",
              help="Copy every finished run of the store to this PostgreSQL database, by run "
                   "id, continuously (the store file stays the bench's journal through any "
                   "network outage) [default: the config's].")
@click.option("--group", default=None, metavar="GROUP",
              help="A local group whose members may use this daemon as its owner does: "
                   "`status` and `wake` over the control socket, and the store (made "
                   "group-readable and writable, for `queue`) [default: the config's, else "
                   "none: owner only]. `hilbench systemd` sets it to the service's group.")
def daemon(config_path: Path | None, db: Path | str | None, control: str | None,
           bench: str | None, queue_url: str | None, push_to: str | None,
           group: str | None) -> None:
    """Run queued campaigns one at a time, fire schedules, answer `hilbench status`.

    One daemon per bench host (by hand, or under systemd: `hilbench systemd`). Each queue item
    runs in a worker process with the runner, resume rule and exit codes of `hilbench run`; a
    bench's agents and instruments belong to one campaign at a time, so a `hilbench run` by
    hand meanwhile is refused (and the daemon waits while one holds the bench). SIGTERM stops
    the run in progress (marked aborted) and the daemon; the next start resumes it. After a
    SIGKILL, the next start resumes the campaign too: every unit once.

    Several benches, one queue: give each daemon its own store file and --bench, and the same
    --queue postgresql://… (and --push-to, usually the same database); `hilbench queue add
    --db postgresql://… --bench NAME` queues for one bench, `hilbench status --all --db
    postgresql://…` shows them all.

    Logs: STORE.logs/daemon.log, STORE.logs/worker.log, and the campaign logs beside them
    (0600). `hilbench status` asks over STORE.logs/control.sock, which tells other users only
    that a daemon runs: the owner, root and the members of --group may ask more. Every stop
    (Ctrl-C, SIGTERM, an error, and `queue stop`/`pause`/`resume` as they are seen) is said
    on stderr and in daemon.log with its reason.
    """
    from sqlalchemy.exc import DBAPIError

    from hilbench.daemon.control import ControlError
    from hilbench.daemon.manager import Daemon, DaemonError
    from hilbench.private_files import PrivateLogHandler, private_dir
    from hilbench.store import StoreError
    from hilbench.store.paths import logs_dir

    config = _config(config_path)
    from hilbench.daemon.db import is_url

    d = config.daemon
    if control is not None:
        d.control = control
    d.bench = bench or d.bench
    d.queue = queue_url or d.queue
    d.push_to = push_to or d.push_to
    d.group = group or d.group
    if is_url(db):
        click.echo(f"{click.style('error:', fg='red')} the daemon's --db is its own store file "
                   "(its journal: runs are written there first); give the shared database as "
                   "--queue URL and --push-to URL", err=True)
        raise SystemExit(EXIT_USAGE)
    for name, value in (("--queue", d.queue), ("--push-to", d.push_to)):
        if value is not None and not is_url(value):
            click.echo(f"{click.style('error:', fg='red')} {name} takes a postgresql:// URL, "
                       f"not {value!r}", err=True)
            raise SystemExit(EXIT_USAGE)
    store = db if db is not None else (d.store or _db_path(None))
    from hilbench.store.errors import access_problem

    problem = access_problem(Path(store), write=True) if Path(store).is_file() else None
    if problem is not None:  # another user's store, say: said before its logs are touched
        store_failed(problem)
    logs = logs_dir(Path(store).resolve())
    try:
        private_dir(logs, parents=True)
        handler = PrivateLogHandler(logs / "daemon.log", encoding="utf-8")
    except OSError as exc:
        click.echo(f"{click.style('error:', fg='red')} {logs / 'daemon.log'}: the daemon's log "
                   f"cannot be written ({exc.strerror or exc})", err=True)
        raise SystemExit(EXIT_USAGE) from None
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    handler.setLevel(logging.INFO)
    root = logging.getLogger()
    root.addHandler(handler)
    root.setLevel(min(root.level or logging.WARNING, logging.INFO))
    for h in root.handlers:
        if h is not handler and h.level == logging.NOTSET:
            # The terminal (the journal under systemd) keeps -v's level, but also shows the
            # daemon's own record of items started and ended; the file gets every info line.
            h.setLevel(logging.INFO)
            h.addFilter(_daemon_info_or_warnings)
    try:
        d = Daemon(config, Path(store))
    except (DaemonError, ControlError, StoreError, ValueError, OSError, DBAPIError) as exc:
        from hilbench.daemon.db import redact

        why = redact(str(getattr(exc, "orig", None) or exc)).strip()
        click.echo(f"{click.style('error:', fg='red')} {why}", err=True)
        handler.handle(root.makeRecord("hilbench.daemon", logging.ERROR, __file__, 0,
                                       "the daemon did not start: %s", (why,), None))
        raise SystemExit(EXIT_USAGE) from None
    raise SystemExit(d.run())


def _daemon_info_or_warnings(record: logging.LogRecord) -> bool:
    return record.levelno >= logging.WARNING or record.name.startswith("hilbench.daemon")


def fetch_status(db: Path | str, connect: str | None, key: Path | None,
                 daemon_key: Path | None, timeout_s: float = 2.0,
                 bench: str | None = None) -> dict[str, Any]:
    """The daemon's status (``bench``'s on a shared queue), or what the store says when no
    daemon answers."""
    from hilbench.daemon.control import ControlError, NotAllowed, request

    if connect is None:
        from hilbench.daemon.locate import daemon_row

        info = daemon_row(db, bench)
        if info is None:
            from hilbench.daemon.queue_db import QueueDB

            with QueueDB(db) as q:
                info = q.daemon_info(bench)
        connect = info.get("control")
        if connect is None:
            return _offline(db, "no daemon has run on this store")
        if info.get("host") == socket.gethostname() and not pid_alive(info.get("pid")):
            return _offline(db, f"the daemon of this store (pid {info.get('pid')}) has exited")
    try:
        public = None
        if daemon_key is not None:
            from hilbench.wire.keys import load_public

            public = load_public(daemon_key)
        return request(connect, "status", timeout_s=timeout_s, key=key, daemon_key=public)
    except NotAllowed as exc:  # it runs; what it does is its owner's (and group's) to see
        return _offline(db, str(exc), state="running (not yours to ask)")
    except ControlError as exc:
        if key is not None:
            raise
        return _offline(db, str(exc))


def all_benches(db: Path | str, down_after_s: float) -> dict[str, Any]:
    """Every bench that has served this queue, from the heartbeat rows its daemons write (no
    control socket needed: a bench on another host answers through the database)."""
    from hilbench.daemon.locate import is_up
    from hilbench.daemon.queue_db import QueueDB

    now = time.time()
    with QueueDB(db) as q:
        benches = q.benches()
        items = q.items()
        where = q.describe()
    for b in benches:
        b["last_seen_s_ago"] = round(now - b["last_seen"], 1)
        b["up"] = is_up(b, down_after_s, now)
        b["queued"] = sum(1 for i in items if i.bench == b["bench"] and i.state == "queued")
    return {"queue": where, "down_after_s": down_after_s, "benches": benches,
            "items": {"total": len(items),
                      "any_bench": sum(1 for i in items if i.bench is None)}}


def render_all(report: dict[str, Any]) -> str:
    lines = [f"queue {report['queue']}: {report['items']['total']} item(s), "
             f"{report['items']['any_bench']} for any bench"]
    if not report["benches"]:
        lines.append("no daemon has served this queue yet")
    for b in report["benches"]:
        doing = (f"item {b['item_id']}" if b["item_id"] else "") + (
            f" ({b['detail']})" if b["detail"] else "")
        head = (f"bench {b['bench']}: {b['state'] or 'up'}" if b["up"] else
                f"bench {b['bench']}: DOWN (not seen for {b['last_seen_s_ago']:.0f} s; was "
                f"{b['state'] or '?'})" if b["state"] != "stopped" else
                f"bench {b['bench']}: stopped")
        lines.append(f"{head} {doing}".rstrip() + f"; pid {b['pid']} on {b['host']}, seen "
                     f"{b['last_seen_s_ago']:.1f} s ago, {b['queued']} queued for it")
        p = b.get("push") or {}
        if p:
            state = f", failing since {_ago(p['failing_since'])}: {p['last_error']}" if p.get(
                "failing_since") else ""
            lines.append(f"  push to {p['to']}: {p['pushed']} run(s) pushed, "
                         f"{p['pending'] if p['pending'] is not None else '?'} pending{state}")
    return "\n".join(lines)


def _offline(db: Path | str, why: str, state: str = "not running") -> dict[str, Any]:
    """What the store says, when the daemon does not (not running, or not ours to ask)."""
    from hilbench.daemon.queue_db import QueueDB

    with QueueDB(db) as q:
        items = q.items()
        history = q.history(1)
    return {
        "daemon": {"state": state, "detail": why, "store": q.describe()},
        "current": None, "agents": [], "instruments": [],
        "last_error": history[0]["message"] if history and history[0]["exit_status"] == "failed"
        else "",
        "queue": {"length": len(items), "head": [i.summary() for i in items[:5]]},
        "schedules": [],
    }


def _ago(t: float | None) -> str:
    return "-" if not t else f"{time.time() - t:.1f} s ago"


def render(status: dict[str, Any]) -> str:
    from hilbench.daemon.localtime import local_when

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
    p = status.get("push")
    if p:
        failing = (f"; failing since {_ago(p['failing_since'])}: {p['last_error']}"
                   if p.get("failing_since") else "")
        lines.append(f"push to {p['to']}: {p['pushed']} run(s) pushed this start, "
                     f"{p['pending'] if p['pending'] is not None else '?'} pending{failing}")
    q = status["queue"]
    head = ", ".join(f"{i['id']} {i['name']} ({i['state']})" for i in q["head"]) or "empty"
    lines.append(f"queue: {q['length']} item(s): {head}")
    for s in status.get("schedules", []):
        nxt = ", ".join(local_when(t, seconds=False) for t in s["next"])
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
@click.option("--bench", default=None,
              help="On a shared queue: the bench whose daemon to ask [default: the one seen "
                   "last].")
@click.option("--all", "all_benches_", is_flag=True,
              help="Every bench of the queue (from the daemons' heartbeats in the database): "
                   "state, current item, host, pid, last seen, push progress; one not seen for "
                   "--down-after seconds is shown DOWN.")
@click.option("--down-after", type=click.FloatRange(min=0.1), default=30.0, show_default=True,
              help="With --all: seconds without a heartbeat after which a bench is down.")
def status(db: Path | str | None, as_json: bool, watch: bool, interval: float,
           connect: str | None, key: Path | None, daemon_key: Path | None, bench: str | None,
           all_benches_: bool, down_after: float) -> None:
    """What the daemon is doing: state, campaign and unit, progress and ETA, agents and
    instruments, the last error, the queue head and the next schedule fires.

    The first line names the store read and how it was chosen (--db, $HILBENCH_DB, else
    ./hilbench.sqlite in the working directory: run it in the store's folder). The daemon is
    the one that serves that store (its control socket is recorded there), so two daemons on
    two stores are each found from their own folder. A store that does not exist is refused
    (exit 2), not made.

    Exit status 3 when a daemon given with --connect does not answer.
    """
    from hilbench.daemon.control import ControlError
    from hilbench.store.errors import StoreError

    named = store_named(db)
    db = existing_store(db)
    while True:
        try:
            report = (all_benches(db, down_after) if all_benches_ else
                      fetch_status(db, connect, key, daemon_key, bench=bench))
            report["read"] = named
            text = (json.dumps(report, indent=2, default=str) if as_json else
                    f"{named}\n" + (render_all(report) if all_benches_ else render(report)))
        except ControlError as exc:
            click.echo(f"{click.style('error:', fg='red')} {exc}", err=True)
            raise SystemExit(EXIT_UNREACHABLE) from None
        except StoreError as exc:
            store_failed(exc)
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
