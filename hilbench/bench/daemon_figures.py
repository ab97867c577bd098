"""Daemon figures: `status` latency under load, the daemon's cost over `hilbench run`, and how
late a `* * * * *` schedule fires on the real clock."""

from __future__ import annotations

import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import click

from hilbench.bench.bench_campaign import bench_fixture, campaign_file
from hilbench.bench.daemon_harness import DaemonProc, env_note, successes
from hilbench.daemon.control import request, wake
from hilbench.daemon.queue_db import QueueDB


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


@click.command()
@click.option("--seconds", type=click.FloatRange(min=5), default=30.0, show_default=True)
@click.option("--cli-calls", type=click.IntRange(min=0), default=100, show_default=True,
              help="Then time this many whole `hilbench status --json` commands, still under "
              "load.")
def status(seconds: float, cli_calls: int) -> None:
    """`status` latency while 1 ms units run back to back under the daemon.

    Asks over the control socket every 50 ms (the request `hilbench status --json` makes), and
    times whole `hilbench status --json` commands, whose own Python start-up comes on top.
    """
    with tempfile.TemporaryDirectory(prefix="hilbench-bench-status-") as tmp:
        folder = Path(tmp)
        db = folder / "s.sqlite"
        path = campaign_file(folder, "status-load", 20_000)
        with QueueDB(db) as q:
            q.add(str(path), path.read_text(), "status-load")
        daemon = DaemonProc(db)
        daemon.start()
        try:
            while successes(db) < 20:
                time.sleep(0.1)
            with QueueDB(db) as q:
                address = q.daemon_info()["control"]
            before, t0 = successes(db), time.monotonic()
            socket_s: list[float] = []
            while time.monotonic() - t0 < seconds:
                started = time.perf_counter()
                request(address, "status", timeout_s=5)
                socket_s.append(time.perf_counter() - started)
                time.sleep(0.05)
            units_per_s = (successes(db) - before) / (time.monotonic() - t0)
            cli_s = []
            for _ in range(cli_calls):
                started = time.perf_counter()
                subprocess.run([sys.executable, "-m", "hilbench", "status", "--db", str(db),
                                "--json"], check=True, capture_output=True)
                cli_s.append(time.perf_counter() - started)
        finally:
            daemon.stop()
    click.echo(f"campaign under the daemon: {units_per_s:.1f} units/s (1 ms "
               f"{bench_fixture().LABEL}, simulated meter) while asked; {env_note()}")
    click.echo(f"status over the control socket: {len(socket_s)} asks, median "
               f"{statistics.median(socket_s) * 1e3:.1f} ms, p99 {_pct(socket_s, 0.99) * 1e3:.1f} "
               f"ms, max {max(socket_s) * 1e3:.1f} ms")
    if cli_s:  # the headline: what a user waits for, Python start-up included
        click.echo(f"whole `hilbench status --json` commands: {len(cli_s)}, median "
                   f"{statistics.median(cli_s) * 1e3:.0f} ms, p99 {_pct(cli_s, 0.99) * 1e3:.0f} "
                   f"ms, max {max(cli_s) * 1e3:.0f} ms (Python start-up included)")


SETTLE_S = 2.0  # quiet before each measured campaign: neither path starts in the other's wake


@click.command("daemon-overhead")
@click.option("--units", type=click.IntRange(min=10), default=400, show_default=True)
@click.option("--rounds", type=click.IntRange(min=1), default=3, show_default=True)
def daemon_overhead(units: int, rounds: int) -> None:
    """Wall time of one campaign file through `hilbench run` and through the daemon's queue,
    interleaved (the order swapped each round).

    `hilbench run FILE --again` runs as a command of its own (Python start-up included), from
    its start to its exit. The daemon's time runs from `queue add` (the file's snapshot put in
    the queue and the daemon woken, as `hilbench queue add` does) to the item's history entry.
    Each path keeps one store across the rounds, so both grow alike; each measurement starts
    after a few seconds of quiet.
    """
    runs: list[float] = []
    queued: list[float] = []
    with tempfile.TemporaryDirectory(prefix="hilbench-bench-overhead-") as tmp:
        folder = Path(tmp)
        path = campaign_file(folder, "overhead", units)
        db = folder / "daemon.sqlite"
        daemon = DaemonProc(db)
        daemon.start()

        def by_run() -> None:
            time.sleep(SETTLE_S)
            started = time.perf_counter()
            subprocess.run([sys.executable, "-m", "hilbench", "run", str(path), "--db",
                            str(folder / "run.sqlite"), "--again", "-q"], check=True,
                           capture_output=True)
            runs.append(time.perf_counter() - started)

        def by_daemon() -> None:
            time.sleep(SETTLE_S)
            started = time.perf_counter()
            with QueueDB(db) as q:
                item = q.add(str(path), path.read_text(), "overhead")
                wake(q)
                while q.history_of(item) is None:
                    time.sleep(0.02)
            queued.append(time.perf_counter() - started)

        try:
            for i in range(rounds):
                for measure in (by_run, by_daemon) if i % 2 == 0 else (by_daemon, by_run):
                    measure()
                click.echo(f"  round {i + 1}: hilbench run {runs[-1]:.2f} s, daemon "
                           f"{queued[-1]:.2f} s", err=True)
        finally:
            daemon.stop()
    r, d = statistics.median(runs), statistics.median(queued)
    click.echo(f"one campaign file, {units} units (1 ms {bench_fixture().LABEL}, spawned CPU "
               f"agent, simulated meter), {rounds} round(s) interleaved; {env_note()}")
    click.echo("`hilbench run FILE --again` (start to exit, Python start-up included) vs the "
               "daemon (`queue add` + wake to the history entry; its worker process waits, "
               "imported, while the bench is idle); each path on one store across rounds")
    click.echo(f"hilbench run: median {r:.2f} s ({', '.join(f'{x:.2f}' for x in runs)}); "
               f"daemon: median {d:.2f} s ({', '.join(f'{x:.2f}' for x in queued)})")
    click.echo(f"daemon adds {100 * (d - r) / r:+.1f} % to the campaign's wall time")


@click.command("schedule")
@click.option("--minutes", type=click.IntRange(min=1), default=2, show_default=True)
def schedule_timing(minutes: int) -> None:
    """How late a `* * * * *` schedule fires on the real clock (waits that many minutes)."""
    with tempfile.TemporaryDirectory(prefix="hilbench-bench-schedule-") as tmp:
        folder = Path(tmp)
        db = folder / "s.sqlite"
        path = campaign_file(folder, "every-minute", 4)
        with QueueDB(db) as q:
            sid = q.add_schedule(name="every-minute", source_path=str(path),
                                 content=path.read_text(), cron="* * * * *", tz="UTC",
                                 missed="skip", trials=None, record=None, priority=0,
                                 now=time.time())
        daemon = DaemonProc(db)
        daemon.start()
        try:
            while True:
                with QueueDB(db) as q:
                    fires = q.fires(sid, 1000)
                if len(fires) >= minutes:
                    break
                time.sleep(0.5)
        finally:
            daemon.stop()
    late = [f["handled_at"] - f["fire_time"] for f in sorted(fires, key=lambda f: f["fire_time"])]
    for f, lag in zip(sorted(fires, key=lambda f: f["fire_time"]), late, strict=True):
        click.echo(f"  fire {time.strftime('%H:%M:%S', time.gmtime(f['fire_time']))} UTC: "
                   f"{f['outcome']} {lag:.3f} s after the minute", err=True)
    click.echo(f"'* * * * *': {len(late)} fire(s) on the real clock, latest {max(late):.3f} s "
               f"after its minute; {env_note()}")
