"""`hilbench power`: power figures from traces, including ones captured by other software."""

from __future__ import annotations

import json
import math
from pathlib import Path

import click

from hilbench.cli import EXIT_USAGE
from hilbench.cli.options import boundary_option
from hilbench.power.metrics import PowerAnalysis, analyze
from hilbench.power.source import SourceInfo
from hilbench.power.traces import TraceFormatError, read_phases_csv, read_samples_csv

_FILE = click.Path(exists=True, dir_okay=False, path_type=Path)


@click.group()
def power() -> None:
    """Power measurements: analyse a trace against its idle / active phases."""


@power.command("analyze")
@click.option(
    "--samples",
    "samples_path",
    type=_FILE,
    required=True,
    help="CSV with header time_s,watts (or time_s,amps with --volts).",
)
@click.option(
    "--phases",
    "phases_path",
    type=_FILE,
    required=True,
    help="CSV with header phase,start_s,end_s,inferences (phase: idle or active).",
)
@click.option(
    "--volts", type=float, default=None, help="Supply voltage turning an amps column into watts."
)
@click.option(
    "--volts-accuracy",
    type=float,
    default=0.0,
    show_default=True,
    help="Relative ± bound of that supply voltage (e.g. 0.01 for 1 %).",
)
@boundary_option("Readings straddling a phase boundary: weighted by overlap, or left out.")
@click.option(
    "--accuracy-relative",
    type=float,
    default=0.0,
    show_default=True,
    help="Instrument accuracy, relative part (fraction of reading).",
)
@click.option(
    "--accuracy-absolute",
    type=float,
    default=0.0,
    show_default=True,
    help="Instrument accuracy, absolute part, in the samples' unit (W or A).",
)
@click.option(
    "--resolution",
    type=float,
    default=0.0,
    show_default=True,
    help="Reading resolution (one digit) in the samples' unit.",
)
@click.option(
    "--aperture",
    type=float,
    default=None,
    help="Integration time per reading, s. If near the interval, readings are taken "
    "as gapless. Default: the interval, without assuming gapless.",
)
@click.option(
    "--timing-uncertainty",
    type=float,
    default=None,
    help="± bound on the offset between sample and phase times, s (default: one sample interval).",
)
@click.option(
    "--min-coverage",
    type=click.FloatRange(0.0, 100.0, min_open=True),
    default=95.0,
    show_default=True,
    help="Percent of each window the readings must cover; a log that starts late or ends "
    "early is used as far as it covers the window, and refused below this.",
)
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="Print one JSON object, and nothing else, on stdout (notes go to stderr; "
    "uncertainties are 95 % expanded).",
)
@click.pass_context
def analyze_command(
    ctx: click.Context,
    samples_path: Path,
    phases_path: Path,
    volts: float | None,
    volts_accuracy: float,
    boundary: str,
    accuracy_relative: float,
    accuracy_absolute: float,
    resolution: float,
    aperture: float | None,
    timing_uncertainty: float | None,
    min_coverage: float,
    as_json: bool,
) -> None:
    """Idle, active, dynamic power and energy per inference, each with a 95 % uncertainty."""
    try:
        trace = read_samples_csv(samples_path, volts=volts)
        windows = read_phases_csv(phases_path)
        for label, value in (
            ("--accuracy-relative", accuracy_relative),
            ("--accuracy-absolute", accuracy_absolute),
            ("--resolution", resolution),
            ("--volts-accuracy", volts_accuracy),
        ):
            if not (math.isfinite(value) and value >= 0):
                raise ValueError(f"{label} must be a number >= 0, got {value}")
        info = SourceInfo(
            name=str(samples_path),
            unit="A" if trace.column == "amps" else "W",
            time_resolution_s=trace.interval_s,
            accuracy_relative=accuracy_relative,
            accuracy_absolute=accuracy_absolute,
            supply_voltage_v=volts,
        )
        result = analyze(
            trace.t,
            trace.watts,
            windows,
            info,
            boundary=boundary,  # type: ignore[arg-type]
            aperture_s=aperture,
            timing_uncertainty_s=timing_uncertainty,
            resolution=resolution,
            supply_relative_uncertainty=volts_accuracy,
            min_coverage=min_coverage / 100.0,
        )
    except (TraceFormatError, ValueError) as exc:
        click.echo(f"error: {exc}", err=True)
        ctx.exit(EXIT_USAGE)
    if as_json:
        # stdout is pure JSON for a program to parse; the notes are for a person: stderr.
        for note in result.notes:
            click.echo(f"note: {note}", err=True)
        click.echo(json.dumps(result.to_json_dict()))
    else:
        click.echo(_table(result))


def _table(result: PowerAnalysis) -> str:
    """A readable summary: value ± 95 % expanded uncertainty, in convenient units."""
    rows = [
        ("idle power", result.idle.mean_w * 1e3, result.idle.uncertainty95 * 1e3, "mW"),
        ("active power", result.active.mean_w * 1e3, result.active.uncertainty95 * 1e3, "mW"),
        ("dynamic power", result.dynamic.value * 1e3, result.dynamic.uncertainty95 * 1e3, "mW"),
    ]
    energy = result.energy_per_inference
    if energy is not None:
        rows.append(("energy / inference", energy.value * 1e3, energy.uncertainty95 * 1e3, "mJ"))
    lines = [f"{'figure':<20} {'value':>12}   {'± U95':>10}"]
    lines += [f"{name:<20} {value:>12.6g} ± {u:>10.3g} {unit}" for name, value, u, unit in rows]
    if energy is None:
        lines.append(f"{'energy / inference':<20} {'n/a':>12}")
    lines.append(
        f"windows: {result.idle.windows} idle ({result.idle.n} readings), "
        f"{result.active.windows} active ({result.active.n} readings)"
    )
    lines += [f"note: {n}" for n in result.notes]
    return "\n".join(lines)
