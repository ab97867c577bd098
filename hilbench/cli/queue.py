"""`hilbench queue …` and `hilbench schedule …`: the daemon's durable queue and cron schedules.

Both write the store directly (they work whether the daemon runs or not) and then nudge a
running daemon so it acts at once.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import click

from hilbench.cli import EXIT_USAGE
from hilbench.cli.options import DB_OPTION as _DB_OPTION
from hilbench.cli.options import db_path as _db_path
from hilbench.cli.options import existing_store, store_failed, store_named


@contextmanager
def _open(db: Path | None, create: bool = False) -> Iterator[Any]:
    """The queue of ``db`` (the default store without --db), closed after the command; only
    the commands that add to it (``create``) make a store that is not there yet. A store
    error while it is opened or used (a damaged page found by a read) is one line, exit 2
    or 4."""
    from hilbench.daemon.queue_db import QueueDB
    from hilbench.store import StoreError

    try:
        with QueueDB(_db_path(db) if create else existing_store(db)) as queue:
            yield queue
    except StoreError as exc:
        store_failed(exc)


def _warn_unwatched(queue: Any, bench: str | None, waits: str) -> None:
    """Say on stderr when no daemon serves this queue (or ``bench`` on it): what ``waits``
    for one, and the command that starts one."""
    import shlex

    from hilbench.cli.run import invoked_program
    from hilbench.daemon.locate import is_up

    row = queue.daemon_info(bench)
    if is_up(row):
        return
    where = queue.describe() if queue.shared else str(Path(queue.describe()).resolve())
    start = [*invoked_program(), "daemon", "--queue" if queue.shared else "--db", where,
             *(["--bench", bench] if bench and queue.shared else [])]
    seen = (f" (the last one, pid {row['pid']} on {row['host']}, "
            f"{'stopped' if row.get('state') == 'stopped' else 'is gone'})" if row else "")
    whose = f"bench {bench} on " if bench else ""
    click.echo(f"{click.style('warning:', fg='yellow')} no daemon serves {whose}{where}{seen}: "
               f"{waits}; start one with: {shlex.join(start)}", err=True)


def _nudge(queue: Any, bench: str | None = None) -> None:
    """Wake a running daemon of this host on this queue (best effort: it polls anyway)."""
    from hilbench.daemon.control import wake

    wake(queue, bench)


def _snapshot(path: Path, trials: int | None) -> tuple[str, str, Any]:
    """The campaign file's text, name and campaign, through the gate `hilbench run` passes
    (exit 2 with one line per problem: nothing is queued)."""
    from hilbench.cli.campaign import echo_campaign_error
    from hilbench.orchestrator.gate import CampaignRefused, gate_file

    try:
        gated = gate_file(path, trials)
    except CampaignRefused as exc:
        echo_campaign_error(exc)
        raise SystemExit(EXIT_USAGE) from None
    # UTF-8: checked as it was read
    return gated.raw.decode("utf-8"), gated.campaign.name, gated.campaign


def bench_for(queue: Any, campaign: Any, given: str | None) -> str | None:
    """The bench an item needs: ``given`` (--bench), else the one bench whose daemon serves
    an agent address or instrument resource the campaign names (daemon config ``serves``).
    None (any bench) only on a single-host store: on a shared queue it is refused, since the
    hardware is bench-bound."""
    if given:
        return given
    names = {a.address for a in campaign.agents if a.address}
    names |= {i.resource for i in campaign.instruments if i.resource}
    known = queue.benches()
    matches = sorted({b["bench"] for b in known if names & set(b["serves"])})
    if len(matches) > 1:
        raise click.UsageError(f"the campaign's agents and instruments belong to several "
                               f"benches ({', '.join(matches)}); say which with --bench")
    if matches:
        return matches[0]
    if queue.shared:
        listed = ", ".join(b["bench"] for b in known) or "none yet"
        raise click.UsageError(
            "a shared queue needs the bench that runs the item: --bench NAME (benches seen: "
            f"{listed}); or list the bench's agent addresses and instrument resources under "
            "`serves` in its daemon config")
    return None


_BENCH = click.option(
    "--bench", default=None,
    help="The bench that runs it (a daemon's --bench) [default: the bench whose daemon "
         "`serves` the campaign's agents or instruments; on a single-host store, any].")


def _when(t: float | None) -> str:
    from hilbench.daemon.localtime import local_when

    return local_when(t)


def _fail(exc: Exception) -> None:
    click.echo(f"{click.style('error:', fg='red')} {exc}", err=True)
    raise SystemExit(EXIT_USAGE)


def _change(db: Path | None, change: Any) -> Any:
    """Apply ``change(queue)``; a refused change is exit 2 with the reason."""
    from hilbench.daemon.queue_db import QueueError

    with _open(db) as q:
        try:
            return change(q)
        except QueueError as exc:
            _fail(exc)


@click.group()
def queue() -> None:
    """The daemon's queue of campaigns (kept in the store; see `hilbench daemon`).

    An item keeps a snapshot of its campaign file (text and SHA-256) taken when it was added:
    editing the file later changes nothing queued. The daemon runs items one at a time,
    highest --priority first, then in the order added; a finished item moves to the history
    with its exit status (completed, failed, aborted, stopped, removed). Adding the same file
    again makes a new item with a new id.
    """


@queue.command("add")
@click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@_DB_OPTION
@click.option("--trials", type=click.IntRange(min=1), default=None,
              help="Run every unit this many times (as `hilbench run --trials`).")
@click.option("--record", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Also write a cassette into this new or empty folder, as `hilbench run "
              "--record` does (after a daemon restart the item goes on with the same one).")
@click.option("--priority", type=int, default=0, show_default=True,
              help="Higher runs first; equal priorities run in the order added.")
@_BENCH
def queue_add(file: Path, db: Path | None, trials: int | None, record: Path | None,
              priority: int, bench: str | None) -> None:
    """Queue a campaign FILE (checked now, as `hilbench run` checks it)."""
    text, name, campaign = _snapshot(file, trials)
    if record is not None and record.exists() and any(record.iterdir()):
        raise click.BadParameter(f"{record} is not empty: a cassette is written into a new or "
                                 "empty folder", param_hint="--record")
    with _open(db, create=True) as q:
        bench = bench_for(q, campaign, bench)
        item_id = q.add(str(file.resolve()), text, name, trials=trials,
                        record=str(record.resolve()) if record else None, priority=priority,
                        bench=bench)
        position = [i.id for i in q.items(bench)].index(item_id) + 1
        _nudge(q, bench)
        where = f"bench {bench}, " if bench else ""
        click.echo(f"queued item {item_id}: {name} ({file}), {where}position {position}; "
                   f"{store_named(db)}")
        _warn_unwatched(q, bench, f"item {item_id} waits until one starts")


@queue.command("list")
@_DB_OPTION
@click.option("--json", "as_json", is_flag=True, help="One JSON array of items.")
def queue_list(db: Path | None, as_json: bool) -> None:
    """The queue in the order it runs (a running item first)."""
    with _open(db) as q:
        items = q.items()
        mode = q.mode()
    if as_json:
        click.echo(json.dumps([i.summary() for i in items], indent=2))
        return
    click.echo(store_named(db))
    click.echo(f"queue: {len(items)} item(s), mode {mode}")
    for i in items:
        extra = f"  ({i.outcome + ': ' if i.outcome else ''}{i.message})" if i.message else ""
        if i.state == "running":
            extra += _daemon_says(db, i)
        click.echo(f"{i.id:>5}  {i.state:<8} p{i.priority:<3} {i.name:<24} "
                   f"{('bench ' + i.bench) if i.bench else 'any bench':<16} "
                   f"added {_when(i.added_at)}  {i.content_hash[:12]}{extra}")


def _daemon_says(db: Path | None, item: Any) -> str:
    """What the daemon running ``item`` says of it when that is not in the store yet (its
    disk is full: the item's end could not be written)."""
    from hilbench.cli.daemon import fetch_status

    daemon = fetch_status(_db_path(db), None, None, None, timeout_s=1.0,
                          bench=item.bench).get("daemon", {})
    detail = str(daemon.get("detail") or "")
    if daemon.get("state") == "waiting" and detail.startswith(f"item {item.id}: "):
        return f"  (daemon: {detail.removeprefix(f'item {item.id}: ')})"
    return ""


@queue.command("remove")
@click.argument("item_id", type=int)
@_DB_OPTION
def queue_remove(item_id: int, db: Path | None) -> None:
    """Take a waiting item off the queue (it goes to the history as 'removed')."""
    _change(db, lambda q: q.remove(item_id))
    click.echo(f"removed item {item_id}; {store_named(db)}")


@queue.command("move")
@click.argument("item_id", type=int)
@click.option("--before", "before", type=int, required=True, help="The item to move in front of.")
@_DB_OPTION
def queue_move(item_id: int, before: int, db: Path | None) -> None:
    """Move an item in front of another (it takes that item's priority)."""

    def move(q: Any) -> list[int]:
        q.move(item_id, before)
        return [i.id for i in q.items()]

    order = _change(db, move)
    click.echo(f"moved item {item_id}; queue order: {' '.join(map(str, order))}; "
               f"{store_named(db)}")


@queue.command("pause")
@click.option("--now", is_flag=True,
              help="Stop the run in progress at once (marked aborted, redone on resume) "
                   "instead of after it.")
@_DB_OPTION
def queue_pause(now: bool, db: Path | None) -> None:
    """Pause after the unit in progress (or at once with --now); `queue resume` goes on."""
    with _open(db) as q:
        q.set_mode("pause_now" if now else "pause")
        _nudge(q)
    click.echo("queue paused" + (" now" if now else " after the current unit")
               + f"; {store_named(db)}")


@queue.command("resume")
@_DB_OPTION
def queue_resume(db: Path | None) -> None:
    """Run the queue again after pause or stop (the paused campaign resumes where it was)."""
    from hilbench.orchestrator.session import Outcome

    with _open(db) as q:
        q.set_mode("run")
        waited = q.release_waits(Outcome.STORE_UNWRITABLE.value)
        _nudge(q)
    click.echo("queue running" + (f"; {waited} item(s) waiting for the store's disk are tried "
                                  "now" if waited else "") + f"; {store_named(db)}")


@queue.command("stop")
@_DB_OPTION
def queue_stop(db: Path | None) -> None:
    """Let the current campaign finish, then start nothing more until `queue resume`."""
    with _open(db) as q:
        q.set_mode("stop")
        _nudge(q)
    click.echo(f"queue stops after the current campaign; {store_named(db)}")


@queue.command("history")
@_DB_OPTION
@click.option("--limit", type=click.IntRange(min=1), default=20, show_default=True)
@click.option("--json", "as_json", is_flag=True, help="One JSON array, with every run id.")
def queue_history(db: Path | None, limit: int, as_json: bool) -> None:
    """Finished items, newest first: exit status, how it ended (the outcome: completed with
    failed runs, invalid campaign, …), runs, how often the campaign started (restarts after a
    kill or stop, retries), start and stop times, and why (message)."""
    with _open(db) as q:
        rows = q.history(limit)
    if as_json:
        click.echo(json.dumps(rows, indent=2))
        return
    click.echo(store_named(db))
    for r in rows:
        campaign = (r["campaign_uid"] or "-")[:8]
        outcome = f" ({r['outcome']})" if r.get("outcome") else ""
        click.echo(f"{r['id']:>5}  {r['exit_status']:<9} {r['name']:<24} campaign {campaign} "
                   f"{len(r['run_uids'])} run(s) in {r['starts']} start(s)  "
                   f"{_when(r['started_at'])} -> "
                   f"{_when(r['stopped_at'])}{outcome}  {r['message']}")


@click.group()
def schedule() -> None:
    """Cron schedules that queue a campaign (run by `hilbench daemon`).

    Each fire queues a snapshot of the file taken when the schedule was added (re-add it to
    change it). A fire while the schedule's previous item is still queued or running is
    coalesced into it and recorded. Fires missed while the daemon was down follow --missed:
    skip (recorded, nothing queued) or run-once (one item for all of them).
    """


@schedule.command("add")
@click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--cron", "cron", required=True,
              help='Five-field cron expression, e.g. "0 22 * * *" (22:00 every day).')
@click.option("--tz", "tz", default=None,
              help="IANA time zone the cron expression is read in [default: this host's]; "
                   "times are shown in this host's zone, named.")
@click.option("--missed", type=click.Choice(["skip", "run-once"]), default="skip",
              show_default=True, help="What a fire missed while the daemon was down does.")
@click.option("--trials", type=click.IntRange(min=1), default=None)
@click.option("--record", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Also write each fire's cassette, into DIR/item-ID (ID: the queue item).")
@click.option("--priority", type=int, default=0, show_default=True)
@_BENCH
@_DB_OPTION
def schedule_add(file: Path, cron: str, tz: str | None, missed: str, trials: int | None,
                 record: Path | None, priority: int, bench: str | None,
                 db: Path | None) -> None:
    """Queue FILE at every fire of a cron expression."""
    from hilbench.daemon.localtime import zone_name
    from hilbench.daemon.schedule import ScheduleError, check, fires_after

    tz = tz or zone_name()
    try:
        check(cron, tz, missed)
    except ScheduleError as exc:
        _fail(exc)
    text, name, campaign = _snapshot(file, trials)
    with _open(db, create=True) as q:
        bench = bench_for(q, campaign, bench)
        sid = q.add_schedule(name=name, source_path=str(file.resolve()), content=text, cron=cron,
                             tz=tz, missed=missed, trials=trials,
                             record=str(record.resolve()) if record else None,
                             priority=priority, now=time.time(), bench=bench)
        _nudge(q, bench)
        nxt = fires_after(cron, tz, time.time(), 1)
        click.echo(f"schedule {sid}: {name} at {cron!r} ({tz}), next fire {_when(nxt[0])}; "
                   f"{store_named(db)}")
        _warn_unwatched(q, bench, f"schedule {sid} fires only while one runs")


@schedule.command("list")
@_DB_OPTION
@click.option("--json", "as_json", is_flag=True)
def schedule_list(db: Path | None, as_json: bool) -> None:
    """Schedules with their next fire times and their latest fires."""
    from hilbench.daemon.schedule import fires_after

    with _open(db) as q:
        rows = q.schedules()
        for s in rows:
            s.pop("content")
            s["next"] = fires_after(s["cron"], s["tz"], max(time.time(), s["last_fire"]), 3)
            s["fires"] = q.fires(s["id"], limit=5)
    if as_json:
        click.echo(json.dumps(rows, indent=2))
        return
    for s in rows:
        click.echo(f"{s['id']:>4}  {s['name']:<24} {s['cron']!r} {s['tz']} missed={s['missed']}"
                   f"  next: {', '.join(_when(t) for t in s['next'])}")
        for f in s["fires"]:
            item = f" item {f['item_id']}" if f["item_id"] else ""
            note = f"  {f['note']}" if f["note"] else ""
            click.echo(f"        fire {_when(f['fire_time'])}: {f['outcome']}{item}{note}")


@schedule.command("remove")
@click.argument("schedule_id", type=int)
@_DB_OPTION
def schedule_remove(schedule_id: int, db: Path | None) -> None:
    """Delete a schedule (items it queued stay queued)."""
    _change(db, lambda q: q.remove_schedule(schedule_id))
    click.echo(f"removed schedule {schedule_id}; {store_named(db)}")
