"""The report's ASC table as NeuroBench prints its Table 6: one row per metric (and stage), one
column per system, in fixed units — accuracy in %, times in ms, power in mW, energy per
inference in mJ — so that systems compare at a glance and a figure is never re-scaled into µs,
µJ or nJ beside a neighbour in ms.

Execution times are the single-stream mean over the test set ± its standard error; power and
energy come from each system's power runs with the shortest stream (one sample repeated where
measured, as Table 6 reports them; :func:`hilbench.report.figures.asc.asc_systems` picks them),
± their standard (k = 1) uncertainty, the counterpart of a standard error, from each run's
stored uncertainty budget (a figure without a budget, such as an agent's own report, keeps its
95 % expanded uncertainty and its cell says so). A figure that is the mean of several trials
carries them, so the 5-trial rule is checked on this table as on the others.
"""

from __future__ import annotations

from hilbench.report.asc_table import accuracy_cell, figure_cell, mean_standard_uncertainty
from hilbench.report.figures.asc import AscSystem
from hilbench.report.table import Cell, Column, Table

KEY = "asc.neurobench-table6"
TIME, POWER, ENERGY = "ms", "mW", "mJ"
STAGE_WORDS = {"preprocessing": "pre-processing", "inference": "inference"}

# (row label, stored metric, fixed unit); "{stage}" rows are given once per stage.
ROWS: tuple[tuple[str, str, str], ...] = (
    ("accuracy (%)", "accuracy", "%"),
    ("execution time, pre-processing (ms, mean ± s.e.)", "preprocess_time_s", TIME),
    ("execution time, inference (ms, mean ± s.e.)", "inference_time_s", TIME),
    ("idle power (mW, mean ± s.u.)", "idle_power_w", POWER),
    ("active power, pre-processing (mW, mean ± s.u.)", "active_power_w.preprocessing", POWER),
    ("active power, inference (mW, mean ± s.u.)", "active_power_w.inference", POWER),
    ("dynamic power, pre-processing (mW, mean ± s.u.)", "dynamic_power_w.preprocessing",
     POWER),
    ("dynamic power, inference (mW, mean ± s.u.)", "dynamic_power_w.inference", POWER),
    ("dynamic energy per inference, pre-processing (mJ, mean ± s.u.)",
     "energy_per_inference_j.preprocessing", ENERGY),
    ("dynamic energy per inference, inference (mJ, mean ± s.u.)",
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
    for label, metric, unit in ROWS:
        table.add(Cell.of_text(label), *(_cell(s, metric, unit) for s in systems),
                  ident=label)
    table.notes.append("s.e.: standard error of the mean over the test samples; s.u.: standard "
                       "(k = 1) uncertainty of the mean over trials, from each run's stored "
                       "budget (the instrument's calibration errors do not average out); the "
                       "95 % expanded figures are in each system's own table")
    for system in systems:
        table.notes.append(f"{system.label}: {_power_basis(system)}")
    return table


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
                interval=cell.interval, label=cell.label, fixed_unit=unit)


def _power_basis(system: AscSystem) -> str:
    if system.stream is None:
        return "power not measured (no power runs)"
    runs = len(system.power_runs)
    what = ("one sample repeated" if system.stream == 1
            else f"{system.stream} s streams of consecutive samples, AMORTISED")
    return f"power and energy from {runs} power run(s), {what}"
