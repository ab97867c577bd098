"""QUBO figures from stored runs: BKS-gap and average power against the fixed timeout (the
NeuroBench paper's Fig. 7 and 8), and latency and energy to each gap threshold.

One panel per graph size and density, one line per series (a solver, or system and solver when
several systems are drawn). Gaps are over feasible answers only; a timeout where a run was
infeasible, or overran its deadline, is marked on the line so that no point hides it.
"""

from __future__ import annotations

import math
import statistics
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hilbench.documents import is_set
from hilbench.report.figures.source import FigureRequest, FigureSpec, Source, value
from hilbench.report.figures.style import (
    figure_context,
    log_ticks,
    new_figure,
    save,
    series_styles,
    set_title,
)

if TYPE_CHECKING:
    from matplotlib.axes import Axes


@dataclass
class Point:
    """The runs of one series at one (size, density, timeout)."""

    gaps: list[float] = field(default_factory=list)  # feasible runs only
    runs: int = 0
    infeasible: int = 0
    overruns: int = 0
    powers: list[tuple[float, float | None]] = field(default_factory=list)  # (W, 95 % unc.)

    @property
    def mean_gap(self) -> float | None:
        return statistics.fmean(self.gaps) if self.gaps else None

    @property
    def mean_power(self) -> tuple[float, float | None] | None:
        """Mean power over the runs that measured it, and the uncertainty of that mean."""
        if not self.powers:
            return None
        mean = statistics.fmean(p for p, _ in self.powers)
        uncs = [u for _, u in self.powers]
        unc = (None if any(u is None for u in uncs)
               else math.sqrt(sum(u * u for u in uncs)) / len(uncs))  # type: ignore[operator]
        return mean, unc


@dataclass
class FixedTimeout:
    """Every series' points, keyed (nodes, density) then series then timeout."""

    panels: dict[tuple[int, float], dict[str, dict[float, Point]]]
    series: list[str]
    simulation: list[str]


def fixed_timeout_data(sources: list[Source]) -> FixedTimeout:
    """The campaigns' successful fixed-timeout runs, grouped for drawing."""
    panels: dict[tuple[int, float], dict[str, dict[float, Point]]] = defaultdict(
        lambda: defaultdict(dict))
    series: list[str] = []
    simulation: set[str] = set()
    for source in sources:
        for run in source.runs("qubo.fixed_timeout"):
            p = run["params"]
            name = p["solver"] if len(sources) == 1 else f"{source.label}: {p['solver']}"
            if name not in series:
                series.append(name)
            point = panels[(p["nodes"], p["density"])][name].setdefault(
                float(p["timeout_s"]), Point())
            point.runs += 1
            feasible = is_set(value(run, "feasible")) is True
            gap = value(run, "bks_gap")
            if feasible and gap is not None:
                point.gaps.append(gap)
            elif not feasible:
                point.infeasible += 1
            if is_set(value(run, "overrun")):
                point.overruns += 1
            power = value(run, "avg_power_w")
            if power is not None:
                point.powers.append((power, run["metrics"]["avg_power_w"]["uncertainty"]))
            if run["simulated"]:
                simulation.add(run["simulation"] or "simulated")
    return FixedTimeout({k: dict(v) for k, v in sorted(panels.items())}, series,
                        sorted(simulation))


def _grid(n: int) -> tuple[int, int]:
    cols = min(n, 3)
    return math.ceil(n / cols), cols


def _panel_title(nodes: int, density: float) -> str:
    return f"n = {nodes}, density {100 * density:g} %"


def gap_figure(data: FixedTimeout, out_dir: Path, stem: str = "qubo-gap") -> tuple[Path, Path]:
    """BKS-gap (%) against the timeout (s, log axis), per size and density."""
    return _timeout_figure(data, out_dir, stem, "gap")


def power_figure(data: FixedTimeout, out_dir: Path,
                 stem: str = "qubo-power") -> tuple[Path, Path] | None:
    """Average power (W) during solving against the timeout; None when nothing measured it."""
    if not any(pt.powers for panel in data.panels.values() for s in panel.values()
               for pt in s.values()):
        return None
    return _timeout_figure(data, out_dir, stem, "power")


def _timeout_figure(data: FixedTimeout, out_dir: Path, stem: str,
                    what: str) -> tuple[Path, Path]:
    from matplotlib.ticker import NullLocator

    styles = series_styles(data.series)
    rows, cols = _grid(len(data.panels))
    with figure_context():
        fig = new_figure(PANEL_W * cols, PANEL_H * rows)
        axes = fig.subplots(rows, cols, squeeze=False)
        marked = {"infeasible": False, "overrun": False}
        for ax, ((nodes, density), panel) in zip(axes.flat, data.panels.items(), strict=False):
            for name in data.series:
                points = panel.get(name)
                if points:
                    _draw_series(ax, name, points, styles[name].kw(), what, marked)
            ax.set_xscale("log")
            ax.xaxis.set_minor_locator(NullLocator())  # decades are enough; ticks cost time
            ax.set_title(_panel_title(nodes, density))
            ax.set_xlabel("timeout (s)")
            ax.set_ylabel("BKS-gap (%)" if what == "gap" else "average power (W), from 0")
            if what == "power":  # from 0 W: a 0.02 W wobble is not drawn as a landscape
                ax.set_ylim(bottom=0.0, top=max(ax.get_ylim()[1], 1e-3))
        for ax in list(axes.flat)[len(data.panels):]:
            ax.set_visible(False)
        legend_rows = _legend(fig, axes.flat[0], marked)
        title = ("QUBO BKS-gap after a fixed timeout (feasible answers only)" if what == "gap"
                 else "QUBO average power while solving, mean over seeds")
        set_title(fig, title, data.simulation)
        _fixed_layout(fig, rows, cols, legend_rows)
        return save(fig, out_dir, stem, layout=False)


PANEL_W, PANEL_H = 3.3, 2.6  # inches per panel, its title and axis labels included
AXES_GAP_H, AXES_GAP_W = 0.75, 0.85  # room between panels for titles, labels, tick labels


def _fixed_layout(fig: Any, rows: int, cols: int, legend_rows: int) -> None:
    """Margins computed, not searched: the constrained layout measures every tick label of
    every panel and was most of a many-panel figure's drawing time."""
    title_lines = fig.get_suptitle().count("\n") + 1
    top = 0.12 + 0.19 * title_lines + 0.3
    bottom = 0.62 + 0.24 * legend_rows
    axes_h = PANEL_H - AXES_GAP_H
    height = rows * axes_h + (rows - 1) * AXES_GAP_H + top + bottom
    width = PANEL_W * cols
    left, right = 0.75, 0.15
    axes_w = (width - left - right - (cols - 1) * AXES_GAP_W) / cols
    fig.set_size_inches(width, height)
    fig.subplots_adjust(left=left / width, right=1 - right / width, bottom=bottom / height,
                        top=1 - top / height, wspace=AXES_GAP_W / axes_w,
                        hspace=AXES_GAP_H / axes_h)
    fig.suptitle(fig.get_suptitle(), y=1 - 0.06 / height)  # same title, placed in inches


Series = list[tuple[float, float, "float | None"]]  # (timeout s, value, its uncertainty)


def series_points(points: dict[float, Point], what: str) -> Series:
    """What one series draws, timeout by timeout: the mean BKS-gap in % (``what`` "gap"), or
    the mean power in W with the 95 % uncertainty of that mean ("power"); a timeout with
    nothing to show (no feasible answer, no power reading) has no point."""
    out: Series = []
    for t in sorted(points):
        pt = points[t]
        if what == "gap":
            gap = pt.mean_gap
            if gap is not None:
                out.append((t, 100 * gap, None))
        elif pt.mean_power is not None:
            out.append((t, *pt.mean_power))
    return out


def timeout_series(data: FixedTimeout, what: str) -> dict[tuple[int, float], dict[str, Series]]:
    """Every panel's series as :func:`gap_figure` / :func:`power_figure` draw them."""
    return {panel: {name: series_points(points, what) for name, points in series.items()}
            for panel, series in data.panels.items()}


def _draw_series(ax: Axes, name: str, points: dict[float, Point], kw: dict[str, Any],
                 what: str, marked: dict[str, bool]) -> None:
    timeouts = sorted(points)
    drawn = series_points(points, what)
    xs = [t for t, _, _ in drawn]
    ys = [v for _, v, _ in drawn]
    errs = [e or 0.0 for _, _, e in drawn]
    if what == "power" and any(errs):
        ax.errorbar(xs, ys, yerr=errs, label=name, capsize=2, **kw)
    else:
        ax.plot(xs, ys, label=name, **kw)
    for t in timeouts:
        pt = points[t]
        y = _y_at(xs, ys, t)
        if pt.infeasible:
            marked["infeasible"] = True
            if y is None:  # nothing feasible here: mark it at the top of the panel
                ax.plot([t], [0.95], transform=ax.get_xaxis_transform(), marker="X",
                        color="black", markersize=8, linestyle="none", clip_on=False)
            else:
                ax.plot([t], [y], marker="X", color="black", markersize=8, linestyle="none")
        if pt.overruns and y is not None:
            marked["overrun"] = True
            ax.plot([t], [y], marker="o", markersize=12, markerfacecolor="none",
                    markeredgecolor="black", markeredgewidth=1.0, linestyle="none")


def _y_at(xs: list[float], ys: list[float], t: float) -> float | None:
    return ys[xs.index(t)] if t in xs else None


def _legend(fig: Any, ax: Axes, marked: dict[str, bool]) -> int:
    """One legend for every panel, under them; returns its number of rows."""
    from matplotlib.lines import Line2D

    handles, labels = ax.get_legend_handles_labels()
    seen = dict(zip(labels, handles, strict=False))
    for other in fig.axes[1:]:
        for h, label in zip(*other.get_legend_handles_labels(), strict=False):
            seen.setdefault(label, h)
    handles, labels = list(seen.values()), list(seen)
    if marked["infeasible"]:
        handles.append(Line2D([], [], marker="X", color="black", linestyle="none",
                              markersize=8))
        labels.append("infeasible run(s)")
    if marked["overrun"]:
        handles.append(Line2D([], [], marker="o", markersize=12, markerfacecolor="none",
                              markeredgecolor="black", linestyle="none"))
        labels.append("overrun: actual > requested")
    ncols = min(4, len(labels))
    fig.legend(handles, labels, loc="lower center", bbox_to_anchor=(0.5, 0.005), ncols=ncols)
    return math.ceil(len(labels) / ncols) if labels else 0


@dataclass
class TtsPoint:
    latencies: list[float] = field(default_factory=list)
    energies: list[float] = field(default_factory=list)
    runs: int = 0


def tts_data(sources: list[Source]) -> tuple[dict[str, dict[float, TtsPoint]], list[str]]:
    """Latency and energy to each gap threshold, per series (system, solver and size)."""
    series: dict[str, dict[float, TtsPoint]] = {}
    simulation: set[str] = set()
    for source in sources:
        for run in source.runs("qubo.time_to_solution"):
            p = run["params"]
            name = f"{p['solver']}, n = {p['nodes']}, {100 * p['density']:g} %"
            if len(sources) > 1:
                name = f"{source.label}: {name}"
            for gap in p.get("gaps", []):
                pt = series.setdefault(name, {}).setdefault(float(gap), TtsPoint())
                pt.runs += 1
                latency = value(run, f"tts_s@{gap:g}")
                energy = value(run, f"tts_energy_j@{gap:g}")
                if latency is not None:
                    pt.latencies.append(latency)
                if energy is not None:
                    pt.energies.append(energy)
            if run["simulated"]:
                simulation.add(run["simulation"] or "simulated")
    return series, sorted(simulation)


def tts_figure(sources: list[Source], out_dir: Path,
               stem: str = "qubo-tts") -> tuple[Path, Path] | None:
    """Mean latency (s) and energy (J) to reach each gap threshold; None without such runs."""
    series, simulation = tts_data(sources)
    if not series:
        return None
    from matplotlib.ticker import NullFormatter

    styles = series_styles(list(series))
    with figure_context():
        fig = new_figure(8.0, 3.6)
        fig.set_layout_engine("constrained")
        ax_t, ax_e = fig.subplots(1, 2)
        for name, points in series.items():
            gaps = sorted(points, reverse=True)
            for ax, attr in ((ax_t, "latencies"), (ax_e, "energies")):
                xs = [100 * g for g in gaps if getattr(points[g], attr)]
                ys = [statistics.fmean(getattr(points[g], attr)) for g in gaps
                      if getattr(points[g], attr)]
                ax.plot(xs, ys, label=name, **styles[name].kw())
        thresholds = sorted({100 * g for points in series.values() for g in points})
        for ax, ylabel in ((ax_t, "time to solution (s)"), (ax_e, "energy to solution (J)")):
            ax.set_xscale("log")
            ax.set_yscale("log")
            ax.set_xticks(thresholds, [f"{t:g} %" for t in thresholds])
            ax.xaxis.set_minor_formatter(NullFormatter())
            log_ticks(ax, "y", ylabel[-2])
            ax.invert_xaxis()
            ax.set_xlabel("BKS-gap threshold (%)")
            ax.set_ylabel(ylabel)
        set_title(fig, "QUBO time and energy to solution, mean over the seeds that reached it",
                  simulation)
        handles, labels = ax_t.get_legend_handles_labels()
        if handles:
            fig.legend(handles, labels, loc="outside lower center", ncols=min(3, len(labels)))
        return save(fig, out_dir, stem)


def report_figures(request: FigureRequest) -> list[FigureSpec]:
    """The report's QUBO figures across campaigns: BKS-gap and power against the fixed
    timeout, time and energy to solution."""
    sources, fig_dir = request.sources, request.fig_dir
    figures = []
    data = fixed_timeout_data(sources)
    if data.panels:
        sim = bool(data.simulation)
        figures.append(FigureSpec(
            "qubo-gap", "QUBO BKS-gap against the fixed timeout",
            "Mean BKS-gap over the feasible answers of the seeds, per graph size and density; "
            "X marks a timeout with infeasible answers, a ring one whose runs overran the "
            "deadline (actual > requested).", gap_figure(data, fig_dir), sim))
        figures.append(FigureSpec(
            "qubo-power", "QUBO average power against the fixed timeout",
            "Mean power over the solve window, averaged over seeds; bars: 95 % uncertainty of "
            "the mean. Timeouts too short for two readings have no point.",
            power_figure(data, fig_dir), sim))
    figures.append(FigureSpec("qubo-tts", "QUBO time and energy to solution",
                              "Mean latency and energy until the gap first fell below each "
                              "threshold, over the seeds that reached it.",
                              tts_figure(sources, fig_dir),
                              any(r["simulated"] for s in sources
                                  for r in s.runs("qubo.time_to_solution"))))
    return figures


def trace_runs(source: Source) -> list[str]:
    """The QUBO run whose power trace the report draws: one fixed-timeout run with measured
    power (the longest timeout, then the largest graph)."""
    best: tuple[tuple[float, int], str] | None = None
    for run in source.runs("qubo.fixed_timeout"):
        if value(run, "avg_power_w") is None:
            continue
        key = (float(run["params"]["timeout_s"]), int(run["params"]["nodes"]))
        if best is None or key > best[0]:
            best = (key, run["uid"])
    return [] if best is None else [best[1]]
