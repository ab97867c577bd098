"""`hilbench bench report`: how long `hilbench report` takes on a large store.

The store is filled through the real StoreWriter with QUBO-shaped runs (the same generator as
`hilbench bench results`), and `hilbench report` is run as a user runs it, in a fresh process
(interpreter start-up and matplotlib's import included), writing every figure and both pages:
once for a campaign holding every stored run, once for one campaign of 1 000 runs beside the
others.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

import click
import numpy as np

from hilbench.bench.results_scale import (
    CAMPAIGN_RUNS,
    _scratch_dir,
    _time_command,
    _write_campaign,
)
from hilbench.store import StoreWriter


@click.command()
@click.option("--runs", default=10_000, show_default=True,
              help="Runs in the store (a multiple of 1000).")
@click.option("--repeats", default=2, show_default=True, help="Timed reports per case (median).")
def report_scale(runs: int, repeats: int) -> None:
    """Wall and CPU time of `hilbench report` on a store of RUNS runs."""
    if runs <= 0 or runs % CAMPAIGN_RUNS:
        raise click.BadParameter(f"a positive multiple of {CAMPAIGN_RUNS}", param_hint="--runs")
    rng = np.random.default_rng(0)
    with tempfile.TemporaryDirectory(dir=_scratch_dir()) as tmp:
        big, mixed = Path(tmp) / "one-campaign.sqlite", Path(tmp) / "campaigns.sqlite"
        started = time.perf_counter()
        with StoreWriter(big) as writer:
            _write_campaign(writer, "all-runs", runs, rng)
        with StoreWriter(mixed) as writer:
            for i in range(runs // CAMPAIGN_RUNS):
                _write_campaign(writer, f"grid-{i + 1}", CAMPAIGN_RUNS, rng)
        click.echo(f"stores filled through StoreWriter in {time.perf_counter() - started:.1f} s "
                   f"({runs} runs each)")
        hilbench = [sys.executable, "-m", "hilbench", "report"]
        headline = ""
        for label, db, campaign in (
            (f"one campaign of {runs} runs", big, "all-runs"),
            (f"one campaign of {CAMPAIGN_RUNS} runs in a store of {runs}", mixed, "grid-1"),
        ):
            out = Path(tmp) / f"out-{campaign}"
            wall, cpu = _time_command([*hilbench, campaign, "--db", str(db), "--out", str(out)],
                                      repeats)
            figures = sorted(p.name for p in (out / "figures").iterdir())
            size = (out / "report.html").stat().st_size / 2**20
            click.echo(f"report, {label}: {wall:.2f} s wall, {cpu:.2f} s CPU (medians); "
                       f"{len(figures)} figure files, report.html {size:.1f} MiB")
            if not headline:
                headline = (f"hilbench report on {runs} stored runs: {wall:.2f} s wall, "
                            f"{cpu:.2f} s CPU")
        click.echo(headline)
