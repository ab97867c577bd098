"""The workflow diagram NeuroBench asks of a submission, drawn from what a campaign stored.

Five stages — host pre-processing, data loading, on-device pre-processing, inference,
post-processing — each placed on the host or the device lane, with what happened there, which
stored phases cover it (with their median duration over the campaign's runs), whether it was
timed and by which clock, and whether an instrument's power window covered it. A timed stage
has a thick solid border, an untimed one a thin dashed border; a stage inside a power window
is hatched, so the diagram reads in grayscale.

What each procedure family does in each stage its workload plugin states (:func:`stage_plans`);
the phase names, durations, instruments and domains come from the store. A procedure whose
workload states none is drawn from its stored phases alone, in order, on the device lane.
"""

from __future__ import annotations

import itertools
import statistics
import textwrap
from dataclasses import dataclass, field
from html import escape
from typing import TYPE_CHECKING, Any

from hilbench.contracts.registry import resolve, workloads
from hilbench.store import Store

if TYPE_CHECKING:
    from hilbench.report.campaign_data import CampaignData

NEUROBENCH_STAGES = ("host pre-processing", "data loading", "on-device pre-processing",
                     "inference", "post-processing")
RUNS_SAMPLED = 20  # runs per procedure whose phase durations give the medians


@dataclass(frozen=True)
class StagePlan:
    """What a procedure does in one NeuroBench stage; ``phases`` are the stored phase names
    that cover it, ``powered`` the phases whose power windows cover it."""

    where: str  # "host" | "device" | "none"
    what: str
    timed: str = ""  # '' = not timed
    phases: tuple[str, ...] = ()
    powered: tuple[str, ...] = ()
    time_metric: str = ""  # the stored metric that times this stage, per run


def stage_plans(family: str) -> tuple[StagePlan, ...] | None:
    """What procedure family ``family`` (a workload) does in each NeuroBench stage, as its
    plugin states it (``WorkloadPlugin.stage_plans``); None: not stated."""
    plugin = workloads().get(family)
    if plugin is None or plugin.stage_plans is None:
        return None
    return resolve(plugin.stage_plans)


@dataclass
class Workflow:
    """One procedure family's diagram data."""

    family: str
    agent: str
    driver: str
    stages: list[tuple[str, StagePlan]]
    durations: dict[str, float] = field(default_factory=dict)  # phase -> median s
    times: dict[str, float] = field(default_factory=dict)  # time metric -> median s
    instruments: list[str] = field(default_factory=list)  # one line each


def _instrument_lines(config: dict[str, Any], agent: str) -> list[str]:
    lines = []
    for inst in config.get("instruments") or []:
        if inst.get("measures") != agent:
            continue
        what = inst.get("resource") or (f"simulated bench meter ({inst.get('simulate')})"
                                        if inst.get("simulate") else "")
        settings = inst.get("settings") or {}
        interval = settings.get("sample_interval_s")
        line = f"{inst['id']}: {inst.get('driver')} {what}".strip()
        if interval:
            line += f", every {interval:g} s"
        lines.append(line)
    return lines


def _fill_flow(flow: Workflow, store: Any, run_uids: list[str],
               times: dict[str, list[float]]) -> None:
    """A workflow's median phase durations and stage times over its sampled runs, and its
    stages (NeuroBench's, or for an unknown procedure its stored phases in order)."""
    durations: dict[str, list[float]] = {}
    for run_uid in run_uids:
        for phase in store.phases(run_uid):
            if phase["duration_s"] is not None:
                durations.setdefault(phase["name"], []).append(phase["duration_s"])
    flow.durations = {name: statistics.median(v) for name, v in durations.items()}
    flow.times = {name: statistics.median(v) for name, v in times.items()}
    plans = stage_plans(flow.family)
    if plans is not None:
        flow.stages = list(zip(NEUROBENCH_STAGES, plans, strict=True))
    else:  # unknown procedure: its phases in order, timed by their stored durations
        flow.stages = [(name, StagePlan("device", f"stored phase {name}", "phase start/stop",
                                        (name,)))
                       for name in flow.durations]


def campaign_workflows(data: CampaignData, config: dict[str, Any]) -> list[Workflow]:
    """A workflow per procedure family (and agent) the campaign ran; phase durations are the
    medians over the first :data:`RUNS_SAMPLED` successful runs of each."""
    flows: dict[tuple[str, str], Workflow] = {}
    sampled: dict[tuple[str, str], list[str]] = {}
    times: dict[tuple[str, str], dict[str, list[float]]] = {}
    for run in data.runs:
        if run["status"] != "success":
            continue
        family = str(run["procedure"]).split(".")[0]
        agent = next(iter(run["agents"]), "?")
        key = (family, agent)
        if key not in flows:
            driver = str((run["agents"].get(agent) or {}).get("driver", "?"))
            flows[key] = Workflow(family, agent, driver, [],
                                  instruments=_instrument_lines(config, agent))
            sampled[key] = []
        if len(sampled[key]) < RUNS_SAMPLED:
            sampled[key].append(run["uid"])
        for name in ("preprocess_time_s", "inference_time_s", "actual_s"):
            metric = run["metrics"].get(name)
            if metric is not None and metric["value"] is not None:
                times.setdefault(key, {}).setdefault(name, []).append(metric["value"])
    with Store(data.path) as store:
        for key, flow in flows.items():
            _fill_flow(flow, store, sampled[key], times.get(key, {}))
    return [flows[k] for k in sorted(flows)]


def _seconds(s: float) -> str:
    for scale, unit in ((1.0, "s"), (1e-3, "ms"), (1e-6, "µs")):
        if s >= scale:
            return f"{s / scale:.3g} {unit}"
    return f"{s * 1e9:.3g} ns"


def stage_lines(flow: Workflow, plan: StagePlan) -> list[str]:
    """The lines a stage's box shows (also the diagram's text alternative)."""
    lines = [plan.what]
    for phase in plan.phases:
        if phase in flow.durations:
            lines.append(f"phase '{phase}': median {_seconds(flow.durations[phase])}")
    lines.append(f"timed: {plan.timed}" if plan.timed else "untimed")  # said once, here
    if plan.time_metric in flow.times:
        lines.append(f"{plan.time_metric}: median {_seconds(flow.times[plan.time_metric])}")
    powered = [p for p in plan.powered if p in flow.durations]
    if powered and flow.instruments:
        lines.append(f"power: window '{powered[0]}' "
                     f"({_seconds(flow.durations[powered[0]])})")
    return lines


BOX_W, GAP_X, MARGIN, LINE_H, WRAP = 182, 16, 14, 13, 28


def workflow_svg(flow: Workflow) -> str:
    """The diagram as a standalone SVG document (fixed fonts and sizes: same input, same
    bytes)."""
    boxes = []
    for i, (stage, plan) in enumerate(flow.stages):
        text = [t for line in stage_lines(flow, plan) for t in textwrap.wrap(line, WRAP)]
        boxes.append((i, stage, plan, text))
    box_h = 44 + LINE_H * max((len(b[3]) for b in boxes), default=1)
    lane_h = box_h + 28
    width = MARGIN * 2 + len(boxes) * (BOX_W + GAP_X) - GAP_X + 70
    legend_y = 40 + 2 * lane_h + 10
    height = legend_y + 30 + LINE_H * (len(flow.instruments) + 1)
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" font-family="DejaVu Sans, Arial, sans-serif" '
        'font-size="11">',
        f"<title>Workflow of {escape(flow.family)} on {escape(flow.agent)}</title>",
        '<defs><pattern id="hatch" width="6" height="6" patternUnits="userSpaceOnUse" '
        'patternTransform="rotate(45)"><rect width="6" height="6" fill="#ffffff"/>'
        '<line x1="0" y1="0" x2="0" y2="6" stroke="#b0b0b0" stroke-width="2"/></pattern>'
        '<marker id="arrow" markerWidth="8" markerHeight="8" refX="7" refY="4" '
        'orient="auto"><path d="M0,0 L8,4 L0,8 z" fill="#000000"/></marker></defs>',
        f'<rect x="0" y="0" width="{width}" height="{height}" fill="#ffffff"/>',
        f'<text x="{MARGIN}" y="20" font-size="13" font-weight="bold">'
        f"{escape(flow.family.upper())} workflow on agent {escape(flow.agent)} "
        f"(driver {escape(flow.driver)})</text>",
    ]
    lanes = {"host": 40, "device": 40 + lane_h}
    for lane, y in lanes.items():
        label = "host (orchestrator)" if lane == "host" else f"device ({flow.driver} agent)"
        out.append(f'<rect x="4" y="{y}" width="{width - 8}" height="{lane_h - 6}" '
                   'fill="#f7f7f7" stroke="#999999" stroke-dasharray="2,2"/>')
        out.append(f'<text x="{width - 10}" y="{y + 14}" text-anchor="end" '
                   f'fill="#444444">{escape(label)}</text>')
    centres = []
    for i, stage, plan, text in boxes:
        x = MARGIN + i * (BOX_W + GAP_X)
        y = lanes["host" if plan.where == "host" else "device"] + 18
        powered = any(p in flow.durations for p in plan.powered) and bool(flow.instruments)
        stroke = ('stroke="#000000" stroke-width="3"' if plan.timed
                  else 'stroke="#555555" stroke-width="1" stroke-dasharray="4,3"')
        fill = "url(#hatch)" if powered else "#ffffff"
        out.append(f'<rect x="{x}" y="{y}" width="{BOX_W}" height="{box_h - 8}" rx="4" '
                   f'fill="{fill}" {stroke}/>')
        out.append(f'<text x="{x + 8}" y="{y + 16}" font-weight="bold">'
                   f"{i + 1}. {escape(stage)}</text>")
        for k, line in enumerate(text):
            out.append(f'<text x="{x + 8}" y="{y + 32 + k * LINE_H}">{escape(line)}</text>')
        centres.append((x, y + (box_h - 8) / 2))
    for (x1, y1), (x2, y2) in itertools.pairwise(centres):
        out.append(f'<path d="M{x1 + BOX_W},{y1:.0f} L{x2 - 2},{y2:.0f}" stroke="#000000" '
                   'fill="none" stroke-width="1.2" marker-end="url(#arrow)"/>')
    y = legend_y
    out.append(f'<rect x="{MARGIN}" y="{y}" width="28" height="14" fill="#ffffff" '
               'stroke="#000000" stroke-width="3"/>')
    out.append(f'<text x="{MARGIN + 36}" y="{y + 11}">timed</text>')
    out.append(f'<rect x="{MARGIN + 90}" y="{y}" width="28" height="14" fill="#ffffff" '
               'stroke="#555555" stroke-dasharray="4,3"/>')
    out.append(f'<text x="{MARGIN + 126}" y="{y + 11}">not timed</text>')
    out.append(f'<rect x="{MARGIN + 200}" y="{y}" width="28" height="14" fill="url(#hatch)" '
               'stroke="#555555"/>')
    out.append(f'<text x="{MARGIN + 236}" y="{y + 11}">inside a power window</text>')
    power = flow.instruments or ["no instrument measured this agent"]
    for k, line in enumerate(power):
        out.append(f'<text x="{MARGIN}" y="{y + 34 + k * LINE_H}">power: {escape(line)}</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"
