"""The ASC workload's section of the report (``WorkloadPlugin.report_section``; see
:mod:`hilbench.report.sections`): NeuroBench's Table 6 across every campaign's systems at the
head of the results (standing for each campaign's own Table 6), each system's detailed table
folded under its campaign, and the dynamic-power and energy ratios against the reference."""

from __future__ import annotations

from hilbench.report.figures.source import Source
from hilbench.report.figures.style import ratio_text, versus
from hilbench.report.sections import Grid, GridCell, WorkloadSection
from hilbench.report.trials import ReportedFigures, apply_trial_rule
from hilbench.workloads.asc.report.figures import Ratio, asc_systems, ratios
from hilbench.workloads.asc.report.table6 import KEY as TABLE6_KEY
from hilbench.workloads.asc.report.table6 import table6

DETAIL = "asc.table6/"  # each system's own table (hilbench.workloads.asc.report.table)


def report_section(sources: list[Source], reported: ReportedFigures | None,
                   reference: str | None) -> WorkloadSection:
    systems = asc_systems(sources)
    table = table6(systems)
    if table is not None:
        apply_trial_rule(table, reported)
    found = ratios([s for s in systems if s.stream is not None], reference)
    label = reference or (systems[0].label if len(systems) > 1 else "")
    return WorkloadSection(
        lead_tables=[] if table is None else [table], replaces=(TABLE6_KEY,),
        detail_prefix=DETAIL, detail_title="ASC per system",
        detail_what=("every power stream, the execution time in the power windows, the agents' "
                     "own power reports"),
        grids=[ratio_grid(found, label)] if found else [])


def ratio_grid(found: list[Ratio], reference: str) -> Grid:
    """How many times lower than the reference each system's figures are."""
    return Grid(
        "asc.ratios", f"ASC: how many times lower than the reference ({reference})",
        ["system", "figure", "stage", "reference / system", "in words"],
        ["", "", "", "right", ""],
        [[GridCell(r.system), GridCell(r.label), GridCell(r.stage),
          GridCell(ratio_text(r.ratio) + "×" if r.ratio else "n/m", r.ratio),
          GridCell(versus(r.ratio) if r.ratio else "")] for r in found])
