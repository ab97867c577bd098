"""The report's ASC table as NeuroBench prints its Table 6: one row per metric (and stage), one
column per system, in fixed units — accuracy in %, times in ms, power in mW, energy per
inference in mJ — so that systems compare at a glance and a figure is never re-scaled into µs,
µJ or nJ beside a neighbour in ms.

The rows are what NeuroBench's ASC system-track specification asks a submission to report
(github.com/NeuroBench/system_benchmarks, ASC.md at f9c0b4f, "update specs matching paper"):
test-set accuracy; execution time "averaged over all samples in the test set", with "standard
error", pre-processing "reported separately from inference"; idle and active power, and their
difference as dynamic power; energy as "power by the averaged execution time".

Execution times are the single-stream mean over the test set ± its standard error; power and
energy come from each system's power runs with the shortest stream (one sample repeated where
measured, as Table 6 reports them; :func:`hilbench.workloads.asc.report.figures.asc_systems`
picks them),
± their standard (k = 1) uncertainty, the counterpart of a standard error, from each run's
stored uncertainty budget (a figure without a budget, such as an agent's own report, keeps its
95 % expanded uncertainty and its cell says so). A figure that is the mean of several trials
carries them, so the 5-trial rule is checked on this table as on the others.
"""

from __future__ import annotations

from hilbench.power.mean_uncertainty import mean_standard_uncertainty
from hilbench.report.campaign_data import CampaignData
from hilbench.report.figures.source import Source
from hilbench.report.table import Cell, Column, Table
from hilbench.workloads.asc.report.figures import AscSystem, asc_systems
from hilbench.workloads.asc.report.table import (
    accuracy_cell,
    figure_cell,
    instruments_label,
)

KEY = "asc.neurobench-table6"
TIME, POWER, ENERGY = "ms", "mW", "mJ"
STAGE_WORDS = {"preprocessing": "pre-processing", "inference": "inference"}

# (group heading, row label, stored metric, fixed unit): a figure per stage sits under its
# group's heading (a label row), so that the label column stays narrow enough for a terminal's
# 80 columns beside a system's figures.
ROWS: tuple[tuple[str, str, str, str], ...] = (
    ("", "accuracy (%)", "accuracy", "%"),
    ("execution time (ms, mean ± s.e.)", "pre-processing", "preprocess_time_s", TIME),
    ("execution time (ms, mean ± s.e.)", "inference", "inference_time_s", TIME),
    ("", "idle power (mW, mean ± s.u.)", "idle_power_w", POWER),
    ("active power (mW, mean ± s.u.)", "pre-processing", "active_power_w.preprocessing", POWER),
    ("active power (mW, mean ± s.u.)", "inference", "active_power_w.inference", POWER),
    ("dynamic power (mW, mean ± s.u.)", "pre-processing", "dynamic_power_w.preprocessing",
     POWER),
    ("dynamic power (mW, mean ± s.u.)", "inference", "dynamic_power_w.inference", POWER),
    ("dynamic energy per inference (mJ, mean ± s.u.)", "pre-processing",
     "energy_per_inference_j.preprocessing", ENERGY),
    ("dynamic energy per inference (mJ, mean ± s.u.)", "inference",
     "energy_per_inference_j.inference", ENERGY),
)
EXPANDED_NOTE = ("± 95 % expanded uncertainty: the run stored no uncertainty budget to give "
                 "the standard one")


def table6(systems: list[AscSystem]) -> Table | None:
    """The systems side by side in Table 6's rows and units; None without an ASC system."""
    if not systems:
        return None
    table = Table(KEY, "ASC: NeuroBench Table 6 layout (rows: metrics; columns: systems)",
                  [Column("metric", key=True, align="left"),
                   *(Column(s.label) for s in systems)])
    heading = ""
    for group, label, metric, unit in ROWS:
        if group and group != heading:
            table.add(Cell.of_text(group), *(Cell.of_text("") for _ in systems),
                      section=True, ident=group)
        heading = group
        table.add(Cell.of_text(f"  {label}" if group else label),
                  *(_cell(s, metric, unit) for s in systems),
                  ident=f"{group}: {label}" if group else label, section=not group)
    table.notes.append("s.e.: standard error of the mean over the test samples; s.u.: standard "
                       "(k = 1) uncertainty of the mean over trials, from each run's stored "
                       "budget (the instrument's calibration errors do not average out); the "
                       "95 % expanded figures are in each system's own table")
    for system in systems:
        table.notes.append(f"{system.label}: {_power_basis(system)}")
    return table


def tables(data: CampaignData) -> list[Table]:
    """One campaign's ASC systems (one per agent and ``[[asc]]`` table) in the report's
    Table 6 layout: what `hilbench summary` and the end of `hilbench run` print, built by
    :func:`table6` as the report's table is, so the terminal and the report never differ."""
    table = table6(asc_systems([Source(data.name, data)]))
    return [] if table is None else [table]


def _cell(system: AscSystem, metric: str, unit: str) -> Cell:
    if metric == "accuracy":
        return accuracy_cell(system.group)
    single = metric in ("preprocess_time_s", "inference_time_s")
    simulated = (system.group.simulated("single") if single
                 else bool(system.simulated_power))
    cell = figure_cell(system.figure(metric), simulated)
    uncertainty, note = cell.uncertainty, cell.note
    if not single and cell.value is not None:
        standard = mean_standard_uncertainty(
            [r[metric] for r in system.power_runs if metric in r])
        if standard is not None:
            uncertainty = standard
        elif uncertainty is not None:
            note = "; ".join(n for n in (note, EXPANDED_NOTE) if n)
    return Cell(cell.value, uncertainty, cell.unit, cell.kind, cell.simulated, note,
                cell.trials, cell.missing or ("" if cell.value is not None or single
                                              or system.stream is not None
                                              else "power not measured"),
                interval=cell.interval, fixed_unit=unit,
                label=cell.label if single else instruments_label(system.power_runs, metric,
                                                                  cell.label))


def _power_basis(system: AscSystem) -> str:
    if system.stream is None:
        return "power not measured (no power runs)"
    runs = len(system.power_runs)
    what = ("one sample repeated" if system.stream == 1
            else f"{system.stream} s streams of consecutive samples, AMORTISED")
    return f"power and energy from {runs} power run(s), {what}"
