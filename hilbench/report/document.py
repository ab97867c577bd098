"""The NeuroBench submission report as data: what `hilbench report` renders into HTML and
Markdown. Everything here is read from the store (and the system description file); nothing is
recomputed differently from the summary tables, which come from the same table model.

Sections, as the NeuroBench system track asks: the system (architecture, algorithm,
availability, power-measurement category, included and omitted power domains), a workflow
diagram per procedure, how time and power were measured, the results with their uncertainties
and the trial check, and provenance (campaign and run ids, software versions).
"""

from __future__ import annotations

import datetime as dt
import platform
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path

from hilbench import __version__
from hilbench.contracts.registry import resolve, workloads
from hilbench.report.campaign_data import CampaignData, load_campaign_data
from hilbench.report.figures.source import FigureRequest, Source
from hilbench.report.figures.trace import load_trace, trace_figure
from hilbench.report.methodology import campaign_methodology
from hilbench.report.sections import Detail, WorkloadSection, split_tables
from hilbench.report.summary import summary_tables
from hilbench.report.system import SystemDescription
from hilbench.report.table import Table
from hilbench.report.trials import ReportedFigures
from hilbench.report.workflow import Workflow, campaign_workflows, stage_lines, workflow_svg
from hilbench.safe_paths import safe_name, write_inside
from hilbench.store import Store

FIGURES_DIR = "figures"
VERSIONED = ("numpy", "matplotlib", "jinja2", "pyzmq", "dwave-samplers", "numba")


@dataclass(frozen=True)
class FigureFile:
    """One figure written under the report folder (paths relative to it)."""

    key: str
    title: str
    caption: str
    png: str
    svg: str
    simulated: bool


@dataclass
class WorkflowFigure:
    flow: Workflow
    svg: str  # relative path
    text: list[str]  # the diagram's content as lines, for readers without images


@dataclass
class CampaignSection:
    name: str
    uid: str
    status: str
    started: str
    stopped: str
    config_hash: str
    tables: list[Table]  # every table of the campaign
    workflows: list[WorkflowFigure]
    methodology: list[str]
    figures: list[FigureFile]
    runs_by_status: dict[str, int]
    run_ids: list[tuple[str, str, str]]  # uid, unit key, status
    versions: list[str]  # hilbench versions of the runs and agents, with their hosts
    simulation: list[str]  # what is simulated in the campaign's runs

    # The tables printed (the workload sections' lead tables stand for some), and each
    # section's folded detail: set by build_report once every section is known.
    main_tables: list[Table] = field(default_factory=list)
    details: list[Detail] = field(default_factory=list)


@dataclass
class Report:
    title: str
    generated: str
    store: str
    systems: list[SystemDescription | None]
    campaigns: list[CampaignSection]
    figures: list[FigureFile]  # across campaigns: each workload's (report_figures)
    software: list[str] = field(default_factory=list)
    sections: list[WorkloadSection] = field(default_factory=list)  # each workload's own

    @property
    def simulated(self) -> bool:
        return any(c.simulation for c in self.campaigns)

    @property
    def system_sections(self) -> list[tuple[list[str], SystemDescription | None]]:
        """Each distinct system description once, with the campaigns it describes (one
        ``--system`` given for several campaigns is printed once, not once per campaign)."""
        sections: list[tuple[list[str], SystemDescription | None]] = []
        for campaign, system in zip(self.campaigns, self.systems, strict=True):
            same = next((names for names, known in sections if known == system), None)
            if same is None:
                sections.append(([campaign.name], system))
            else:
                same.append(campaign.name)
        return sections


def _utc(seconds: float | None) -> str:
    if seconds is None:
        return "not ended"
    return dt.datetime.fromtimestamp(seconds, dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")


def _software() -> list[str]:
    out = [f"hilbench {__version__}", f"Python {platform.python_version()}"]
    for name in VERSIONED:
        try:
            out.append(f"{name} {metadata.version(name)}")
        except metadata.PackageNotFoundError:
            continue
    return out


def _provenance(data: CampaignData) -> tuple[dict[str, int], list[tuple[str, str, str]],
                                             list[str], list[str]]:
    statuses: Counter[str] = Counter()
    run_ids, versions, simulation = [], set(), set()
    handshakes: set[int] = set()
    for run in data.runs:
        statuses[run["status"]] += 1
        run_ids.append((run["uid"], run["unit_key"], run["status"]))
        versions.add(f"orchestrator: hilbench {run['hilbench_version']}")
        if id(run["agents"]) not in handshakes:  # runs share one decoded handshake
            handshakes.add(id(run["agents"]))
            for agent_id, info in (run["agents"] or {}).items():
                versions.add(f"agent {agent_id}: driver {info.get('driver')}, hilbench "
                             f"{info.get('hilbench_version')}, protocol "
                             f"{info.get('protocol_version')}, host {info.get('host')}")
        if run["simulated"]:
            simulation.add(run["simulation"] or "simulated")
    return dict(sorted(statuses.items())), run_ids, sorted(versions), sorted(simulation)


def default_trace_runs(source: Source) -> list[str]:
    """The runs whose power trace the report draws, each workload's picks in the registry's
    order (``WorkloadPlugin.trace_runs``)."""
    return [run_uid for w in workloads().values() if w.trace_runs is not None
            for run_uid in resolve(w.trace_runs)(source)]


def _figure(key: str, title: str, caption: str, paths: tuple[Path, Path] | None, out: Path,
            simulated: bool) -> FigureFile | None:
    if paths is None:
        return None
    png, svg = (str(p.relative_to(out)) for p in paths)
    return FigureFile(key, title, caption, png, svg, simulated)


def build_report(
    store_path: Path,
    campaigns: list[tuple[str, str]],
    systems: list[SystemDescription | None],
    out: Path,
    *,
    reference: str | None = None,
    trace_runs: list[str] | None = None,
    reported: ReportedFigures | None = None,
    progress: Callable[[str], None] = lambda _: None,
) -> Report:
    """Read the campaigns ``(uid, label)`` from the store and write the figures under ``out``.

    ``systems`` holds one description per campaign (or None where none was given); the label
    names a campaign's series in figures drawn across campaigns; ``reported`` are figures
    reported earlier that the trials are checked against (default: each trial mean)."""
    fig_dir = out / FIGURES_DIR
    sections = []
    sources = []
    with Store(store_path) as store:
        campaign_rows = [store.campaign(uid) for uid, _ in campaigns]
    for (uid, label), campaign in zip(campaigns, campaign_rows, strict=True):
        progress(f"campaign {label} ({uid[:8]}): reading {campaign['n_runs']} run(s)")
        data = load_campaign_data(store_path, uid)
        source = Source(label, data)
        sources.append(source)
        statuses, run_ids, versions, simulation = _provenance(data)
        progress(f"campaign {label}: tables, workflow, methodology")
        tables = summary_tables(data, reported)
        workflows = []
        for flow in campaign_workflows(data, campaign["config"]):
            fig_dir.mkdir(parents=True, exist_ok=True)
            name = safe_name(f"workflow-{label}-{flow.family}-{flow.agent}") + ".svg"
            path = write_inside(fig_dir, name, workflow_svg(flow))
            text = [f"{i + 1}. {stage} ({plan.where}): " + "; ".join(stage_lines(flow, plan))
                    for i, (stage, plan) in enumerate(flow.stages)]
            workflows.append(WorkflowFigure(flow, str(path.relative_to(out)), text))
        figures = []
        in_campaign = {run["uid"] for run in data.runs}
        runs = ([r for r in trace_runs if r in in_campaign] if trace_runs is not None
                else default_trace_runs(source))
        for run_uid in runs:
            progress(f"campaign {label}: power trace of run {run_uid[:8]}")
            trace = load_trace(store_path, run_uid)
            fig = _figure(
                f"trace-{run_uid[:8]}", f"Power trace of run {run_uid[:8]}",
                f"{trace.unit_key}: readings in watts on the orchestrator's clock, "
                "with the idle and active windows the figures were computed over shaded.",
                trace_figure(trace, fig_dir, f"trace-{label}-{run_uid[:8]}"), out,
                bool(trace.simulation))
            if fig:
                figures.append(fig)
        sections.append(CampaignSection(
            name=campaign["name"], uid=uid, status=campaign["status"],
            started=_utc(campaign["wall_start"]), stopped=_utc(campaign["wall_stop"]),
            config_hash=str(campaign["config"].get("config_hash", "")),
            tables=tables, workflows=workflows,
            methodology=campaign_methodology(data, campaign["config"]),
            figures=figures, runs_by_status=statuses, run_ids=run_ids,
            versions=versions, simulation=simulation))
    progress("figures across campaigns")
    common = _common_figures(sources, fig_dir, out, reference)
    own = _sections(sources, reported, reference)
    for section in sections:
        section.main_tables, section.details = split_tables(section.tables, own)
    ended = [c["wall_stop"] or c["wall_start"] for c in campaign_rows]
    return Report(
        title=_title(systems, campaigns), generated=_utc(max(ended)),
        store=str(store_path), systems=systems, campaigns=sections, figures=common,
        software=_software(), sections=own)


def _sections(sources: list[Source], reported: ReportedFigures | None,
              reference: str | None) -> list[WorkloadSection]:
    """Each workload's own section of the results (``WorkloadPlugin.report_section``)."""
    found = [resolve(w.report_section)(sources, reported, reference)
             for w in workloads().values() if w.report_section is not None]
    return [section for section in found if section is not None]


def _title(systems: list[SystemDescription | None], campaigns: list[tuple[str, str]]) -> str:
    names = [s.name for s in systems if s is not None]
    what = ", ".join(dict.fromkeys(names)) if names else ", ".join(c[1] for c in campaigns)
    return f"NeuroBench system-track report: {what}"


def _common_figures(sources: list[Source], fig_dir: Path, out: Path,
                    reference: str | None) -> list[FigureFile]:
    """Each workload's figures across campaigns (``WorkloadPlugin.report_figures``)."""
    request = FigureRequest(sources, fig_dir, reference)
    figures = [_figure(spec.key, spec.title, spec.caption, spec.paths, out, spec.simulated)
               for w in workloads().values() for target in w.report_figures
               for spec in resolve(target)(request)]
    return [f for f in figures if f is not None]
