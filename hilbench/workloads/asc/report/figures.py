"""ASC figures: NeuroBench's Table 6 for several systems side by side, and how far each system's
dynamic power and energy per inference lie below (or above) a reference system's.

The paper compares Xylo Audio 2 with the Arduino Nano 33 BLE this way (dynamic power 60.9× and
energy per inference 33.4× below the Arduino). Power figures come from the power runs with the
shortest stream (one sample repeated when measured), the way Table 6 reports them; a system
measured only over amortised streams is drawn from those, and the caption says so.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from hilbench.report.figures.source import FigureRequest, FigureSpec, Source
from hilbench.report.figures.style import (
    figure_context,
    log_ticks,
    new_figure,
    save,
    set_title,
    versus,
)
from hilbench.workloads.asc.report.table import STAGES, AscGroup, Figure, asc_groups, combine

POWER_BARS = (
    ("idle", "idle_power_w"),
    ("active, pre-proc.", "active_power_w.preprocessing"),
    ("active, inference", "active_power_w.inference"),
    ("dynamic, pre-proc.", "dynamic_power_w.preprocessing"),
    ("dynamic, inference", "dynamic_power_w.inference"),
)
ENERGY_BARS = (
    ("pre-processing", "energy_per_inference_j.preprocessing"),
    ("inference", "energy_per_inference_j.inference"),
)
HATCHES = ("", "///", "...", "xxx", "\\\\\\", "ooo", "---")
GREYS = ("#222222", "#777777", "#bbbbbb", "#ffffff", "#444444", "#999999", "#dddddd")


@dataclass
class AscSystem:
    """One system's Table-6 figures (one ASC table on one agent of one campaign)."""

    label: str
    group: AscGroup
    stream: int | None  # the power runs used (samples per stream); None: no power runs

    @property
    def power_runs(self) -> list:
        return [] if self.stream is None else self.group.power[self.stream]

    def figure(self, name: str) -> Figure | None:
        if name in ("accuracy", "preprocess_time_s", "inference_time_s"):
            return combine(self.group.single, name)
        return combine(self.power_runs, name)

    @property
    def simulated_power(self) -> str:
        return "" if self.stream is None else self.group.simulation.get(self.stream, "")


def asc_systems(sources: list[Source]) -> list[AscSystem]:
    """Every ASC group of the campaigns, labelled by campaign (and agent when it has several)."""
    systems = []
    for source in sources:
        groups = asc_groups(source.data)
        for group in groups:
            label = source.label if len(groups) == 1 else f"{source.label}/{group.agent}"
            stream = min(group.power) if group.power else None
            systems.append(AscSystem(label, group, stream))
    return systems


@dataclass(frozen=True)
class Ratio:
    """How many times a system's figure lies below the reference's (reference / system)."""

    system: str
    metric: str
    stage: str
    ratio: float | None  # None: either figure missing or not positive

    @property
    def label(self) -> str:
        return {"dynamic_power_w": "dynamic power",
                "energy_per_inference_j": "energy per inference"}.get(self.metric, self.metric)


def ratios(systems: list[AscSystem], reference: str | None = None) -> list[Ratio]:
    """Dynamic power and energy per inference of each system against the reference (the one
    labelled ``reference``, else the first system)."""
    if len(systems) < 2:
        return []
    ref = next((s for s in systems if s.label == reference), systems[0])
    out = []
    for system in systems:
        if system is ref:
            continue
        for metric in ("dynamic_power_w", "energy_per_inference_j"):
            for stage in STAGES:
                a, b = ref.figure(f"{metric}.{stage}"), system.figure(f"{metric}.{stage}")
                value = None
                if a and b and a.value and b.value and a.value > 0 and b.value > 0:
                    value = a.value / b.value
                out.append(Ratio(system.label, metric, stage, value))
    return out


def _legend_label(system: AscSystem, ref_ratios: dict[tuple[str, str], float],
                  first: bool) -> str:
    """A system's legend entry: its streams, and its ratios against the reference (``first``
    of several without ratios: it is the reference)."""
    label = system.label
    if system.stream and system.stream > 1:
        label += f" ({system.stream} s streams)"
    dyn = ref_ratios.get((system.label, "dynamic_power_w"))
    energy = ref_ratios.get((system.label, "energy_per_inference_j"))
    if dyn is not None and energy is not None:
        label += f": dynamic power {versus(dyn)}, energy {versus(energy)}"
    elif first:
        label += " (reference)"
    return label


def table6_figure(systems: list[AscSystem], out_dir: Path, reference: str | None = None,
                  stem: str = "asc-table6") -> tuple[Path, Path] | None:
    """Grouped bars (log axis) of each system's power and energy per inference, with the
    dynamic-power and energy ratios against the reference in the legend."""
    measured = [s for s in systems if s.stream is not None]
    if not measured:
        return None
    ref_ratios = {(r.system, r.metric): r.ratio for r in ratios(measured, reference)
                  if r.stage == "inference"}
    with figure_context():
        fig = new_figure(9.0, 4.2)
        fig.set_layout_engine("constrained")
        ax_p, ax_e = fig.subplots(1, 2, width_ratios=[5, 2.4])
        width = 0.8 / len(measured)
        lowest = {ax_p: float("inf"), ax_e: float("inf")}
        for i, system in enumerate(measured):
            label = _legend_label(system, ref_ratios, first=i == 0 and len(measured) > 1)
            style = {"color": GREYS[i % len(GREYS)], "hatch": HATCHES[i % len(HATCHES)],
                     "edgecolor": "black", "linewidth": 0.8}
            for ax, bars in ((ax_p, POWER_BARS), (ax_e, ENERGY_BARS)):
                xs, heights, errs = [], [], []
                for j, (_, name) in enumerate(bars):
                    fig_ = system.figure(name)
                    if fig_ is None or fig_.value is None or fig_.value <= 0:
                        continue
                    xs.append(j + (i - (len(measured) - 1) / 2) * width)
                    heights.append(fig_.value)
                    errs.append(min(fig_.uncertainty or 0.0, 0.999 * fig_.value))
                lowest[ax] = min([lowest[ax], *(h - e for h, e in zip(heights, errs,
                                                                    strict=True))])
                ax.bar(xs, heights, width, yerr=errs, capsize=2, label=label, **style)
        for ax, bars, ylabel in ((ax_p, POWER_BARS, "power (W)"),
                                 (ax_e, ENERGY_BARS, "energy per inference (J)")):
            ax.set_yscale("log")
            ax.set_axisbelow(True)
            if lowest[ax] < float("inf"):
                ax.set_ylim(bottom=lowest[ax] / 2)
            log_ticks(ax, "y", ylabel[-2])
            ax.set_xticks(range(len(bars)), [b[0] for b in bars], rotation=20, ha="right")
            ax.set_ylabel(ylabel)
            ax.set_xlabel("Table 6 figure (stage)")
        simulation = sorted({s.simulated_power for s in measured if s.simulated_power})
        set_title(fig, "ASC: NeuroBench Table 6 side by side (log axis; bars: 95 % uncertainty)",
                  simulation)
        handles, labels = ax_p.get_legend_handles_labels()
        fig.legend(handles, labels, loc="outside lower center", ncols=1)
        return save(fig, out_dir, stem)


def report_figures(request: FigureRequest) -> list[FigureSpec]:
    """The report's ASC figure across campaigns: Table 6, systems side by side."""
    systems = asc_systems(request.sources)
    return [FigureSpec("asc-table6", "ASC Table 6, systems side by side",
                       "Idle, active and dynamic power and energy per inference of each "
                       "system (log axis), with dynamic-power and energy ratios against "
                       "the reference system.",
                       table6_figure(systems, request.fig_dir, request.reference),
                       any(s.simulated_power for s in systems))]


def trace_runs(source: Source) -> list[str]:
    """The ASC runs whose power trace the report draws: each agent's power run with the
    shortest stream."""
    firsts: dict[str, tuple[int, str]] = {}
    for run in source.runs("asc.power"):
        agent = str(run["params"].get("agent"))
        stream = int(run["params"].get("stream_samples", 1))
        if agent not in firsts or stream < firsts[agent][0]:
            firsts[agent] = (stream, run["uid"])
    return [run_uid for _, run_uid in firsts.values()]
