"""`hilbench bench power-accuracy --sweep DIR`: the accuracy map of issue 35 — median error and
coverage of dynamic energy per inference against inference length (0.1-100 ms, at 1 MS/s) and
sample rate (3 Hz-2 MS/s, at 1 ms), marker-cut windows against software alignment, each point
:func:`hilbench.bench.power_accuracy_marker.run`. Written as ``power-accuracy-sweep.json`` (the
points) and ``.svg``/``.png`` (drawn from those points only, in the report's figure style)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hilbench.bench.power_accuracy_marker import run
from hilbench.report.figures.style import (
    figure_context,
    log_ticks,
    new_figure,
    save,
    series_styles,
    set_title,
)
from hilbench.safe_paths import open_inside

if TYPE_CHECKING:
    from matplotlib.figure import Figure

INFERENCE_MS = (0.1, 0.3, 1.0, 3.0, 10.0, 30.0, 100.0)
RATES = (3.0, 30.0, 300.0, 3e3, 3e4, 3e5, 1e6, 2e6)
AT_RATE = 1e6  # the inference-length sweep's rate
AT_INFERENCE_MS = 1.0  # the rate sweep's inference length
STEM = "power-accuracy-sweep"
SERIES = {True: "marker edges", False: "software alignment"}


def sweep_points(trials: int, seed: int, inference_ms: tuple[float, ...] = INFERENCE_MS,
                 rates: tuple[float, ...] = RATES) -> list[dict[str, Any]]:
    """Each point's summary, tagged with the axis it belongs to; a point whose windows the
    estimators refuse (too few samples) carries the reason instead of figures."""
    grid = ([("inference_ms", ms, AT_RATE) for ms in inference_ms]
            + [("rate", AT_INFERENCE_MS, rate) for rate in rates])
    points = []
    for axis, ms, rate in grid:
        for marker in (True, False):
            try:
                summary = run(ms, rate, marker, trials, seed).to_json_dict()
            except ValueError as exc:
                summary = {"inference_ms": ms, "rate": rate, "marker": marker,
                           "trials": trials, "refused": str(exc)}
            points.append({"axis": axis, **summary})
    return points


def sweep_figure(points: list[dict[str, Any]]) -> Figure:
    """Median error (top) and coverage with its Wilson 95 % CI (bottom), against inference
    length (left) and sample rate (right); one series per alignment."""
    from matplotlib.ticker import LogLocator

    styles = series_styles(list(SERIES.values()))
    fig = new_figure(9.0, 6.4)
    axes = fig.subplots(2, 2, sharex="col")
    for col, (axis, label, unit) in enumerate((("inference_ms", "inference length", "s"),
                                               ("rate", "sample rate", "Hz"))):
        for marker, name in SERIES.items():
            mine = sorted((p for p in points if p["axis"] == axis and p["marker"] == marker
                           and "refused" not in p), key=lambda p: _x(p, axis))
            x = [_x(p, axis) for p in mine]
            axes[0][col].plot(x, [p["median_abs_error"] for p in mine], label=name,
                              **styles[name].kw())
            low = [p["coverage"] - p["coverage_ci95"][0] for p in mine]
            high = [p["coverage_ci95"][1] - p["coverage"] for p in mine]
            axes[1][col].errorbar(x, [p["coverage"] for p in mine], yerr=[low, high],
                                  label=name, capsize=2, **styles[name].kw())
        for row in (0, 1):
            axes[row][col].set_xscale("log")
            log_ticks(axes[row][col], "x", unit)
        axes[0][col].set_yscale("log")
        axes[0][col].yaxis.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0)))
        _percent(axes[0][col])
        _percent(axes[1][col])
        axes[0][col].set_ylabel("median |error|")
        axes[1][col].axhspan(0.93, 0.97, color="0.85", zorder=0, label="target 93-97 %")
        axes[1][col].axhline(0.95, color="0.4", linewidth=0.8)
        axes[1][col].set_ylabel("coverage of the 95 % interval")
        axes[1][col].set_xlabel(f"{label} ({unit})")
        axes[0][col].set_title(f"against {label}" + (" at 1 MS/s" if col == 0 else " at 1 ms"))
    axes[0][0].legend(loc="best")
    axes[1][0].legend(loc="lower right")
    set_title(fig, "Dynamic energy per inference: error and coverage against the truth",
              ["power: JS220-class instrument and device, virtual time"])
    fig.set_layout_engine("constrained")
    return fig


def _percent(ax: Any) -> None:
    """Fractions as percentages on the y axis (no mathtext on a log axis); minor ticks
    labelled too when the axis spans less than about a decade and a half."""
    from matplotlib.ticker import NullFormatter, PercentFormatter

    lo, hi = ax.get_ylim()
    ax.yaxis.set_major_formatter(PercentFormatter(xmax=1.0))
    narrow = lo > 0 and hi / lo < 30
    ax.yaxis.set_minor_formatter(PercentFormatter(xmax=1.0) if narrow else NullFormatter())


def _x(point: dict[str, Any], axis: str) -> float:
    """The point's abscissa in SI units (inference length in seconds)."""
    return point["inference_ms"] * 1e-3 if axis == "inference_ms" else point["rate"]


def write_sweep(out_dir: Path, trials: int, seed: int, **grid: Any) -> tuple[Path, Path, Path]:
    """Run the sweep, write its points as JSON and draw them; returns the JSON, PNG and SVG
    paths."""
    points = sweep_points(trials, seed, **grid)
    out_dir.mkdir(parents=True, exist_ok=True)
    with open_inside(out_dir, f"{STEM}.json", "w") as fh:
        json.dump({"trials_per_point": trials, "seed": seed, "points": points}, fh, indent=2)
    with figure_context():
        png, svg = save(sweep_figure(points), out_dir, STEM)
    return out_dir / f"{STEM}.json", png, svg
