"""`hilbench bench power-accuracy`: dynamic energy per inference against the simulated truth,
first through the simulated meter process (:mod:`hilbench.bench.power_accuracy_meter`), then
in virtual time (:mod:`hilbench.bench.power_accuracy`). The command sits above both so neither
imports the other's caller (no import circle)."""

from __future__ import annotations

import json
from pathlib import Path

import click
import numpy as np

from hilbench.bench.power_accuracy import (
    HEADER,
    MULTIRUN_RUNS,
    SCENARIOS,
    run_multirun,
    run_scenario,
)
from hilbench.bench.power_accuracy_marker import run as run_marker_comparison
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
@click.option("--inference-ms", type=float, default=None,
              help="Length of one inference (ms) for the fast-instrument comparison; any of "
                   "--inference-ms, --rate, --marker, --json runs it (in virtual time, "
                   "--trials trials) instead of the cases above. Default 1 ms.")
@click.option("--rate", type=float, default=None,
              help="Sample rate of the fast instrument, samples/s (default 1000000).")
@click.option("--marker", is_flag=True, default=False,
              help="Cut windows by the device's marker edges in the instrument's own stream "
                   "(one sample period + stated latency); without it, software alignment "
                   "(clock-offset mapping with its stated uncertainty).")
@click.option("--json", "as_json", is_flag=True, default=False,
              help="Print the comparison's figures as one JSON object.")
@click.option("--sweep", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Write the accuracy map into this folder: median error and coverage against "
                   "inference length (0.1-100 ms at 1 MS/s) and sample rate (3 Hz-2 MS/s at "
                   "1 ms), marker against software alignment, --trials trials per point "
                   "(power-accuracy-sweep.json, .svg, .png).")
def power_accuracy(trials: int, virtual_trials: int, seed: int, boundary: BoundaryPolicy,
                   inference_ms: float | None, rate: float | None, marker: bool,
                   as_json: bool, sweep: Path | None) -> None:
    """Relative error of dynamic energy per inference against the simulated truth, and how
    often its stated 95 % interval covers the truth (the target: 90-99 % of trials).

    First, each case as a campaign measures it: the simulated 34465A as a process of its own
    (its calibration error drawn per meter within the spec) over TCP SCPI, the Keysight
    driver, phase acquisition with drift restamping, the campaign's estimators. With the
    default 10 trials this takes about 3-4 minutes on an idle 2-core machine. Then, unless
    --virtual-trials 0, the same per-trial analysis over many trials simulated in virtual
    time (seconds).

    With --inference-ms, --rate, --marker or --json: dynamic energy per inference of a short
    inference measured by a simulated JS220-class instrument, its windows cut by marker edges
    or placed by software alignment, over --trials trials in virtual time; prints median
    error, coverage and its Wilson 95 % CI (and with --json, the simulation's parameters).
    With --sweep DIR: that comparison over inference lengths and sample rates, as JSON and a
    figure.
    """
    if trials < 0 or virtual_trials < 0:
        raise click.BadParameter("must not be negative", param_hint="--trials")
    if sweep is not None:
        from hilbench.bench.power_accuracy_sweep import write_sweep  # matplotlib: only here

        if trials < 1:
            raise click.UsageError("--trials must be positive")
        for path in write_sweep(sweep, trials, seed):
            click.echo(f"power-accuracy sweep: wrote {path}")
        return
    if inference_ms is not None or rate is not None or marker or as_json:
        _fast_instrument(1.0 if inference_ms is None else inference_ms,
                         1e6 if rate is None else rate, marker, trials, seed, as_json)
        return
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


def _fast_instrument(inference_ms: float, rate: float, marker: bool, trials: int, seed: int,
                     as_json: bool) -> None:
    """The marker-or-software comparison (:mod:`hilbench.bench.power_accuracy_marker`)."""
    if not (inference_ms > 0 and rate > 0 and trials > 0):
        raise click.UsageError("--inference-ms, --rate and --trials must be positive")
    summary = run_marker_comparison(inference_ms, rate, marker, trials, seed)
    if as_json:
        click.echo(json.dumps(summary.to_json_dict(), indent=2))
        return
    low, high = summary.coverage_ci95
    how = "marker edges" if marker else "software alignment"
    click.echo(f"power-accuracy (simulated, {how}): {inference_ms:g} ms inference at "
               f"{rate:g} samples/s, {trials} trials: median error "
               f"{summary.median_abs_error:.3%}, median U95 "
               f"{summary.median_relative_uncertainty95:.3%}, coverage {summary.coverage:.1%} "
               f"(95 % CI {low:.1%}-{high:.1%})")
