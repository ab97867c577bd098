"""`hilbench bench power-accuracy`: dynamic energy per inference against the simulated truth,
first through the simulated meter process (:mod:`hilbench.bench.power_accuracy_meter`), then
in virtual time (:mod:`hilbench.bench.power_accuracy`). The command sits above both so neither
imports the other's caller (no import circle)."""

from __future__ import annotations

import click
import numpy as np

from hilbench.bench.power_accuracy import (
    HEADER,
    MULTIRUN_RUNS,
    SCENARIOS,
    run_multirun,
    run_scenario,
)
from hilbench.bench.power_accuracy_meter import METER_CASES, run_meter_case, run_meter_multirun
from hilbench.cli.options import boundary_option
from hilbench.power.align import BoundaryPolicy


@click.command("power-accuracy")
@click.option("--trials", default=10, show_default=True,
              help="Trials per case through the real meter process (each takes real time: "
                   "1-5 s of windows plus start-up).")
@click.option("--virtual-trials", default=1000, show_default=True,
              help="Trials per scenario of the virtual-time analysis sweep (0: skip it).")
@click.option("--seed", default=1, show_default=True, help="Random seed (whole run).")
@boundary_option("How readings straddling a window boundary are treated.")
def power_accuracy(trials: int, virtual_trials: int, seed: int, boundary: BoundaryPolicy) -> None:
    """Relative error of dynamic energy per inference against the simulated truth, and how
    often its stated 95 % interval covers the truth (the target: 90-99 % of trials).

    First, each case as a campaign measures it: the simulated 34465A as a process of its own
    (its calibration error drawn per meter within the spec) over TCP SCPI, the Keysight
    driver, phase acquisition with drift restamping, the campaign's estimators. With the
    default 10 trials this takes about 3-4 minutes on an idle 2-core machine. Then, unless
    --virtual-trials 0, the same per-trial analysis over many trials simulated in virtual
    time (seconds).
    """
    if trials < 0 or virtual_trials < 0:
        raise click.BadParameter("must not be negative", param_hint="--trials")
    rng = np.random.default_rng(seed)
    click.echo(f"boundary readings: {boundary}; seed {seed}")
    summaries = []
    if trials:
        click.echo("through the simulated meter process, the Keysight driver and the campaign's "
                   "acquisition:")
        click.echo(HEADER)
        for case in METER_CASES:
            summaries.append(run_meter_case(case, trials, rng, boundary))
            click.echo(summaries[-1].row())
        summaries.append(run_meter_multirun(METER_CASES[0], max(1, trials // 2), rng, boundary))
        click.echo(summaries[-1].row())
    if virtual_trials:
        click.echo("virtual time (same per-trial analysis, readings simulated in process):")
        click.echo(HEADER)
        for sc in SCENARIOS:
            summaries.append(run_scenario(sc, virtual_trials, rng, boundary))
            click.echo(summaries[-1].row())
        summaries.append(run_multirun(SCENARIOS[1], max(1, virtual_trials // MULTIRUN_RUNS),
                                      rng, boundary))
        click.echo(summaries[-1].row())
    click.echo("coverage: the fraction of trials whose 95 % interval held the truth; its Wilson "
               "95 % CI shows how much the trial count can say ('consistent': the CI overlaps "
               "90-99 %). Targets: median error < 0.5 % at 3 Hz, coverage 90-99 %")
    click.echo(
        "power-accuracy: "
        + "; ".join(
            f"{s.name}: median error {s.median_error:.3%}, coverage {s.coverage:.1%} "
            f"of {s.trials}" for s in summaries
        )
    )
