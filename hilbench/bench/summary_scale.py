"""`hilbench bench summary`: how long `hilbench summary` takes on a campaign of many runs.

One campaign of QUBO fixed-timeout runs (the real StoreWriter, the metrics a run stores, 5 seeds
× repetitions per row so that every row carries trials for the 5 % rule) is written, then
`hilbench summary CAMPAIGN` is run as a user runs it (a fresh process, interpreter start-up
included) as text, and as JSON (every cell with its trials), output to /dev/null.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

import click
import numpy as np

from hilbench.bench.results_scale import _scratch_dir, _time_command, _write_campaign
from hilbench.store import StoreWriter

TARGET_S = 1.0  # the bound for 10 000 runs


@click.command()
@click.option("--runs", default=10000, show_default=True, help="Runs in the one campaign.")
@click.option("--repeats", default=3, show_default=True, help="Timed runs per command (median).")
def summary_scale(runs: int, repeats: int) -> None:
    """Latency of `hilbench summary` (text and JSON) on one campaign of RUNS runs."""
    import sys

    if runs < 1:
        raise click.BadParameter("must be at least 1", param_hint="--runs")
    hilbench = [sys.executable, "-m", "hilbench"]
    wall, cpu = _time_command([*hilbench, "--version"], repeats)
    click.echo(f"python start-up + hilbench import: {wall:.2f} s wall, {cpu:.2f} s CPU "
               "(included below)")
    with tempfile.TemporaryDirectory(dir=_scratch_dir()) as tmp:
        path = Path(tmp) / "summary.sqlite"
        started = time.perf_counter()
        with StoreWriter(path) as writer:
            _write_campaign(writer, "grid", runs, np.random.default_rng(0))
        click.echo(f"{runs} runs in one campaign written through StoreWriter in "
                   f"{time.perf_counter() - started:.1f} s "
                   f"({path.stat().st_size / 2**20:.1f} MiB)")
        headline = ""
        for label, extra in (("summary grid", []),
                             ("summary grid --format json > /dev/null", ["--format", "json"])):
            wall, cpu = _time_command([*hilbench, "summary", "grid", "--db", str(path), *extra],
                                      repeats)
            click.echo(f"{label:<40} {wall:>5.2f} s wall {cpu:>5.2f} s CPU (median)")
            if not headline:
                verdict = "within" if wall <= TARGET_S else "OVER"
                headline = (f"hilbench summary of {runs} runs: {wall:.2f} s wall, {cpu:.2f} s "
                            f"CPU ({verdict} the {TARGET_S:g} s target)")
    click.echo(headline)
