"""`hilbench bench results`: how long `hilbench results` takes as the store grows, on SQLite
and (``--db postgresql://…``) on PostgreSQL in the same run.

A store is filled through the real StoreWriter with campaigns of runs shaped like the first
registered workload's (its bench fixture's; as shipped QUBO: load and solve phases, solution
events, a batch of power samples, the metrics a fixed-timeout run stores), and `hilbench
results` is run as a user runs it (a fresh process each time, so interpreter start-up is
included) at each requested size: the summary table, one campaign by
name, and the full CSV and JSON listings (written to /dev/null). A PostgreSQL store gets the
same runs, copied from the SQLite one at each size with :func:`hilbench.store.copy.copy_runs`
(filling is set-up, not the subject; the copy's rate is printed too), so both listings are of
identical stores.
"""

from __future__ import annotations

import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import click
import numpy as np

from hilbench.bench.bench_campaign import bench_fixture
from hilbench.cli.options import DB
from hilbench.documents import new_uid
from hilbench.store import StoreWriter
from hilbench.store.copy import copy_runs
from hilbench.store.engine import DbTarget

CAMPAIGN_RUNS = 1000


def _write_campaign(
    writer: StoreWriter, name: str, runs: int, rng: np.random.Generator
) -> list[str]:
    """Write one campaign of ``runs`` runs shaped like the bench workload's; return their
    uids."""
    uid = new_uid()
    uids: list[str] = []
    writer.begin_campaign(uid, name, {"name": name, "bench": "results"})
    write_run = bench_fixture().write_run
    t = 0.0
    for i in range(runs):
        run, t = write_run(writer, uid, i, t, rng)
        uids.append(run)
    writer.end_campaign(uid, "success")
    return uids


def _time_command(args: list[str], repeats: int) -> tuple[float, float]:
    """Median wall time and median CPU time (user + system) of the command's process: on a
    busy machine the wall time includes waiting for a core, the CPU time does not."""
    walls, cpus = [], []
    env = _compiled_env()
    for _ in range(repeats + 1):  # the first run warms the page cache and is discarded
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        started = time.perf_counter()
        subprocess.run(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True,
                       env=env)
        walls.append(time.perf_counter() - started)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return statistics.median(walls[1:]), statistics.median(cpus[1:])


def _compiled_env() -> dict[str, str] | None:
    """The commands run from compiled modules, as an installed hilbench does: where
    PYTHONDONTWRITEBYTECODE is set (an editable install then compiles the package at every
    start, ~0.1 s) they may write it, beside the sources (Python's default; a cache prefix
    would hide the libraries' own compiled files, and the warm-up run would pay for all)."""
    if not os.environ.get("PYTHONDONTWRITEBYTECODE"):
        return None
    return {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def _scratch_dir() -> str | None:
    """A memory-backed folder when there is one: filling the store is set-up, not the subject."""
    return "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else None


@click.command()
@click.option("--sizes", default="1000,10000", show_default=True,
              help="Stored-run counts to measure at (comma separated, multiples of 1000).")
@click.option("--repeats", default=3, show_default=True, help="Timed runs per command (median).")
@click.option("--db", "dbs", type=DB, multiple=True,
              help="A store to fill and measure: a SQLite file (new) or an empty PostgreSQL "
                   "database URL; repeatable [default: a temporary SQLite file, deleted "
                   "afterwards, which is also used when only URLs are given].")
def results_scale(sizes: str, repeats: int, dbs: tuple[Any, ...]) -> None:
    """Latency of `hilbench results` (table, --campaign, csv, json) at growing store sizes,
    on SQLite and on each PostgreSQL store given (same runs, same run of the benchmark)."""
    targets = _sizes(sizes)
    rng = np.random.default_rng(0)
    hilbench = [sys.executable, "-m", "hilbench"]
    wall, cpu = _time_command([*hilbench, "--version"], repeats)
    click.echo(f"python start-up + hilbench import: {wall:.2f} s wall, {cpu:.2f} s CPU "
               f"(included below); {_load_line()}")
    with tempfile.TemporaryDirectory(dir=_scratch_dir()) as tmp:
        files = [db for db in dbs if not isinstance(db, DbTarget)]
        urls = [db for db in dbs if isinstance(db, DbTarget)]
        if len(files) > 1:
            raise click.BadParameter("give at most one SQLite file", param_hint="--db")
        path = files[0] if files else Path(tmp) / "results.sqlite"
        for url in urls:
            _require_empty(url)
        stored = 0
        headlines: list[str] = []
        click.echo(f"{'stored runs':>11}  {'store':<10} {'command':<36} {'wall':>7} {'CPU':>7}"
                   "  (medians)")
        with StoreWriter(path) as writer:
            for target in targets:
                fill_started = time.perf_counter()
                new: list[str] = []
                while stored < target:
                    new += _write_campaign(writer, f"grid-{stored // CAMPAIGN_RUNS + 1}",
                                           CAMPAIGN_RUNS, rng)
                    stored += CAMPAIGN_RUNS
                writer.flush()
                click.echo(f"{stored:>11}  sqlite     (filled through StoreWriter in "
                           f"{time.perf_counter() - fill_started:.1f} s, "
                           f"{path.stat().st_size / 2**20:.1f} MiB)")
                for url in urls:
                    copy_started = time.perf_counter()
                    copy_runs(path, url, new)
                    took = time.perf_counter() - copy_started
                    click.echo(f"{stored:>11}  postgresql (the same runs copied in {took:.1f} s, "
                               f"{len(new) / took:.0f} runs/s; {_pg_size(url) / 2**20:.1f} MiB)")
                for name, db in (("sqlite", path), *(("postgresql", url) for url in urls)):
                    headline = _time_listings(name, db, stored, repeats)
                    if target == targets[-1]:
                        headlines.append(headline)
        for line in headlines:
            click.echo(line)
        click.echo(_load_line())


def _sizes(sizes: str) -> list[int]:
    """The --sizes list, sorted; refused unless each is a positive multiple of a campaign."""
    try:
        targets = sorted({int(s) for s in sizes.split(",") if s.strip()})
    except ValueError:
        raise click.BadParameter(
            f"{sizes!r} is not a list of integers", param_hint="--sizes"
        ) from None
    if not targets or any(s <= 0 or s % CAMPAIGN_RUNS for s in targets):
        raise click.BadParameter(f"sizes must be positive multiples of {CAMPAIGN_RUNS}",
                                 param_hint="--sizes")
    return targets


def _load_line() -> str:
    """The machine's load as the figures were taken: a loaded machine's wall times include
    waiting for a core."""
    one, five, _ = os.getloadavg()
    return f"load average {one:.2f} (1 min), {five:.2f} (5 min) on {os.cpu_count()} cores"


def _time_listings(name: str, db: Any, stored: int, repeats: int) -> str:
    """Time each listing of one store, print a line for each; the headline of `results`."""
    headline = ""
    for label, extra in (
        ("results", []),
        ("results --campaign grid-1", ["--campaign", "grid-1"]),
        ("results --all", ["--all"]),
        ("results --format csv > /dev/null", ["--format", "csv"]),
        ("results --format json > /dev/null", ["--format", "json"]),
    ):
        wall, cpu = _time_command(
            [sys.executable, "-m", "hilbench", "results", "--db", _arg(db), *extra], repeats
        )
        click.echo(f"{stored:>11}  {name:<10} {label:<36} {wall:>5.2f} s {cpu:>5.2f} s")
        if label == "results":
            headline = (f"hilbench results at {stored} stored runs on {name}: "
                        f"{wall:.2f} s wall, {cpu:.2f} s CPU")
    return headline


def _arg(db: Any) -> str:
    """The --db argument for a child process (a URL as given: the child needs its password)."""
    return db.url if isinstance(db, DbTarget) else str(db)


def _require_empty(target: DbTarget) -> None:
    from hilbench.store import Store, StoreError, StoreWriter

    StoreWriter(target).close()  # creates the schema in a new database
    with Store(target) as store:
        n = store.count_runs()
    if n:
        raise StoreError(f"{target} already holds {n} runs; give an empty database")


def _pg_size(target: DbTarget) -> int:
    conn = target.connect_postgresql()
    try:
        return int(conn.execute("SELECT pg_database_size(current_database())").fetchone()[0])
    finally:
        conn.close()
