"""The maxcut report figure (approximation ratio against graph size, one line per solver and
restarts, one panel per density) and its NeuroBench workflow stages."""

from __future__ import annotations

import statistics
from collections import defaultdict

from hilbench.report.figures.source import FigureRequest, FigureSpec, value
from hilbench.report.figures.style import (
    figure_context,
    new_figure,
    save,
    series_styles,
    set_title,
)
from hilbench.report.workflow import StagePlan
from hilbench_maxcut.solver import EXACT_MAX_NODES

STAGES: tuple[StagePlan, ...] = (
    StagePlan("host", "graph drawn from (n, density, seed) as the QUBO workloads', target "
              "found (exact for n ≤ 20)"),
    StagePlan("device", "edge list sent to the agent (load)", phases=("load",)),
    StagePlan("none", "none"),
    StagePlan("device", "local search from random partitions", "agent clock: timed region",
              ("cut",), ("cut",), "actual_s"),
    StagePlan("host", "orchestrator re-scores the partition, ratio to the target"),
)


def report_figures(request: FigureRequest) -> list[FigureSpec]:
    """Mean approximation ratio against n, per density, over every campaign drawn."""
    points: dict[float, dict[str, dict[int, list[float]]]] = defaultdict(
        lambda: defaultdict(lambda: defaultdict(list)))
    several = len(request.sources) > 1
    for source in request.sources:
        for run in source.runs("maxcut.cut"):
            ratio = value(run, "approximation_ratio")
            if ratio is None:
                continue
            p = run["params"]
            name = f"{p['solver']} ×{p['restarts']}"
            name = f"{source.label}: {name}" if several else name
            points[p["density"]][name][p["nodes"]].append(ratio)
    if not points:
        return []
    densities = sorted(points)
    names = sorted({n for per in points.values() for n in per})
    styles = series_styles(names)
    with figure_context():
        fig = new_figure(3.2 * len(densities) + 1.0, 3.4)
        axes = fig.subplots(1, len(densities), squeeze=False, sharey=True)[0]
        for ax, density in zip(axes, densities, strict=True):
            for name, by_n in sorted(points[density].items()):
                sizes = sorted(by_n)
                ax.plot(sizes, [statistics.fmean(by_n[n]) for n in sizes], label=name,
                        **styles[name].kw())
            ax.axhline(1.0, color="#777777", linewidth=0.8)
            ax.axvline(EXACT_MAX_NODES, color="#777777", linewidth=0.8, linestyle=":")
            ax.ticklabel_format(axis="y", useOffset=False)
            ax.set_title(f"density {density:g}")
            ax.set_xlabel("nodes")
            ax.set_ylabel("cut / target")
            ax.grid(True, alpha=0.3)
        axes[0].legend(fontsize="small")
        # Cuts are computed on the real CPU and re-scored here: a simulated power meter
        # (if any) does not touch this figure.
        set_title(fig, "MaxCut approximation ratio", [])
        paths = save(fig, request.fig_dir, "maxcut-ratio")
    return [FigureSpec("maxcut-ratio", "MaxCut approximation ratio against graph size",
                       "Mean cut over the target (exact for n ≤ 20, else the best of 128 "
                       "local-search restarts, so a ratio may pass 1) over seeds and repetitions, "
                       "per density; the dotted line marks the largest exact target.",
                       paths, False)]
