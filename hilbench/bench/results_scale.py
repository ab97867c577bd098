"""`hilbench bench results`: how long `hilbench results` takes as the store grows.

A store is filled through the real StoreWriter with campaigns of QUBO-shaped runs (load and
solve phases, solution events, a batch of power samples, the metrics a fixed-timeout run
stores), and `hilbench results` is run as a user runs it (a fresh process each time, so
interpreter start-up is included) at each requested size: the summary table, one campaign by
name, and the full CSV and JSON listings (written to /dev/null).
"""

from __future__ import annotations

import itertools
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import click
import numpy as np

from hilbench import __version__
from hilbench.documents import (
    Event,
    Metric,
    PhaseStart,
    PhaseStop,
    RunStart,
    RunStop,
    Samples,
    new_uid,
)
from hilbench.store import StoreWriter

CAMPAIGN_RUNS = 1000
NODES = (100, 250, 500, 1000, 2500)
SOLVERS = ("sa", "tabu")
TIMEOUTS = (0.001, 0.01, 0.1, 1.0)
SEEDS = range(5)


def _grid() -> list[tuple[int, int, str, float]]:
    return list(itertools.product(NODES, SEEDS, SOLVERS, TIMEOUTS))


def _write_campaign(writer: StoreWriter, name: str, runs: int, rng: np.random.Generator) -> None:
    uid = new_uid()
    writer.begin_campaign(uid, name, {"name": name, "bench": "results"})
    grid = _grid()
    t = 0.0
    for i in range(runs):
        n, seed, solver, timeout = grid[i % len(grid)]
        rep = i // len(grid)
        key = f"qubo/fixed_timeout/n={n}/d=0.05/seed={seed}/{solver}/timeout={timeout:g}/rep={rep}"
        params = {"workload": "qubo", "scenario": "fixed_timeout", "nodes": n, "density": 0.05,
                  "seed": seed, "solver": solver, "timeout_s": timeout, "repetition": rep,
                  "target": -n // 10, "target_source": "published"}
        run = new_uid()
        writer(RunStart(run, uid, key, "qubo.fixed_timeout", params, {"cpu0": {}}, t,
                        time.time(), __version__))
        load, solve = new_uid(), new_uid()
        writer(PhaseStart(load, run, "load", t, {}))
        writer(PhaseStop(load, run, t + 0.01, "success"))
        writer(PhaseStart(solve, run, "solve", t + 0.01, {}))
        writer(Event(run, solve, "solution", t + 0.01 + timeout, {"cost": -n // 10}))
        ts = t + 0.01 + np.arange(20) * 0.025
        writer(Samples(run, solve, "dmm", "W", ts, 30 + rng.standard_normal(20)))
        writer(PhaseStop(solve, run, t + 0.02 + timeout, "success"))
        gap = abs(rng.normal(0.05, 0.02))
        feasible = rng.random() > 0.02
        actual = timeout * (1.02 if rng.random() > 0.05 else 1.3)
        for metric, value, unit, unc in (
            ("requested_s", timeout, "s", None),
            ("actual_s", actual, "s", None),
            ("overrun", float(actual > timeout * 1.05 and actual - timeout > 5e-4), "", None),
            ("feasible", float(feasible), "", None),
            ("cost", float(-n // 10), "", None),
            ("bks_gap", gap if feasible else None, "", None),
            ("run_time_s", timeout * 1.02, "s", 1e-6),
            ("avg_power_w", 30 + rng.normal(), "W", 0.4),
            ("energy_j", (30 + rng.normal()) * timeout, "J", 0.01),
        ):
            writer(Metric(run, metric, value, unit, unc,
                          meta={"target": -n // 10, "target_source": "published"}
                          if metric == "bks_gap" else {}))
        status = "success" if rng.random() > 0.01 else "fail"
        writer(RunStop(run, t + 0.03 + timeout, status, "" if status == "success" else "bench"))
        t += 0.05 + timeout
    writer.end_campaign(uid, "success")


def _time_command(args: list[str], repeats: int) -> tuple[float, float]:
    """Median wall time and median CPU time (user + system) of the command's process: on a
    busy machine the wall time includes waiting for a core, the CPU time does not."""
    walls, cpus = [], []
    for _ in range(repeats + 1):  # the first run warms the page cache and is discarded
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        started = time.perf_counter()
        subprocess.run(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
        walls.append(time.perf_counter() - started)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return statistics.median(walls[1:]), statistics.median(cpus[1:])


def _scratch_dir() -> str | None:
    """A memory-backed folder when there is one: filling the store is set-up, not the subject."""
    return "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else None


@click.command()
@click.option("--sizes", default="1000,10000", show_default=True,
              help="Stored-run counts to measure at (comma separated, multiples of 1000).")
@click.option("--repeats", default=3, show_default=True, help="Timed runs per command (median).")
@click.option("--db", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Store file to fill [default: a temporary file, deleted afterwards].")
def results_scale(sizes: str, repeats: int, db: Path | None) -> None:
    """Latency of `hilbench results` (table, --campaign, csv, json) at growing store sizes."""
    try:
        targets = sorted({int(s) for s in sizes.split(",") if s.strip()})
    except ValueError:
        raise click.BadParameter(
            f"{sizes!r} is not a list of integers", param_hint="--sizes"
        ) from None
    if not targets or any(s <= 0 or s % CAMPAIGN_RUNS for s in targets):
        raise click.BadParameter(f"sizes must be positive multiples of {CAMPAIGN_RUNS}",
                                 param_hint="--sizes")
    rng = np.random.default_rng(0)
    hilbench = [sys.executable, "-m", "hilbench"]
    wall, cpu = _time_command([*hilbench, "--version"], repeats)
    click.echo(f"python start-up + hilbench import: {wall:.2f} s wall, {cpu:.2f} s CPU "
               "(included below)")
    with tempfile.TemporaryDirectory(dir=_scratch_dir()) as tmp:
        path = db or Path(tmp) / "results.sqlite"
        stored = 0
        headline = ""
        click.echo(f"{'stored runs':>11}  {'command':<36} {'wall':>7} {'CPU':>7}  (medians)")
        with StoreWriter(path) as writer:
            for target in targets:
                fill_started = time.perf_counter()
                while stored < target:
                    _write_campaign(writer, f"grid-{stored // CAMPAIGN_RUNS + 1}",
                                    CAMPAIGN_RUNS, rng)
                    stored += CAMPAIGN_RUNS
                writer.flush()
                click.echo(f"{stored:>11}  (store filled through StoreWriter in "
                           f"{time.perf_counter() - fill_started:.1f} s, "
                           f"{path.stat().st_size / 2**20:.1f} MiB)")
                for label, extra in (
                    ("results", []),
                    ("results --campaign grid-1", ["--campaign", "grid-1"]),
                    ("results --all", ["--all"]),
                    ("results --format csv > /dev/null", ["--format", "csv"]),
                    ("results --format json > /dev/null", ["--format", "json"]),
                ):
                    wall, cpu = _time_command(
                        [*hilbench, "results", "--db", str(path), *extra], repeats
                    )
                    click.echo(f"{stored:>11}  {label:<36} {wall:>5.2f} s {cpu:>5.2f} s")
                    if label == "results":
                        headline = (f"hilbench results at {stored} stored runs: {wall:.2f} s "
                                    f"wall, {cpu:.2f} s CPU")
        click.echo(headline)
