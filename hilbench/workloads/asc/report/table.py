"""The ASC summary in the layout of NeuroBench's Table 6, from stored runs only.

Rows: accuracy, execution time, idle / active / dynamic power and dynamic energy per inference;
columns: pre-processing and inference. Below the table, how it was measured (instrument,
sample interval, windows, boundary policy, amortised streams, power domains), because a figure
without its method is not a NeuroBench result. Execution times carry their standard error;
power and energy their 95 % expanded uncertainty. With several runs (trials) of one
configuration the figure is their mean; the instrument's calibration errors (gain, offset,
supply voltage) are common to all runs and do not average out, the rest does. Each figure says
its per-trial values, which :mod:`hilbench.report.trials` checks by NeuroBench's 5-trial rule.
"""

from __future__ import annotations

import json
import statistics
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from rich.console import Console

from hilbench.power.instrument_agreement import disagreeing_instruments, disagreement_text
from hilbench.power.marker_windows import MARKER_CUT
from hilbench.power.mean_uncertainty import mean_uncertainty
from hilbench.power.provenance import origin_of, origins_text
from hilbench.report.campaign_data import CampaignData, load_campaign_data
from hilbench.report.table import EMPTY, Cell, Column, Table, format_quantity
from hilbench.workloads.asc.report.marker_note import marker_parts

STAGES = ("preprocessing", "inference")
DEFAULT_TIMING = "pre-processing and inference timed on the device's clock"


@dataclass(frozen=True)
class Figure:
    """One reported number: mean over runs, its uncertainty, and the spread between runs."""

    value: float | None
    uncertainty: float | None
    unit: str
    runs: int
    trials: tuple[float, ...] = ()  # the per-trial values (two or more trials)
    reason: str = ""
    meta: dict[str, Any] = field(default_factory=dict)  # the first run's metric meta


@dataclass
class AscGroup:
    """The runs of one ``[[asc]]`` table on one agent."""

    agent: str
    single: list[dict[str, dict[str, Any]]] = field(default_factory=list)  # metrics per run
    power: dict[int, list[dict[str, dict[str, Any]]]] = field(default_factory=dict)  # by stream
    params: dict[str, Any] = field(default_factory=dict)
    failed: list[str] = field(default_factory=list)
    # What is simulated in the runs, keyed "single" or the stream length; absent: measured.
    simulation: dict[str | int, str] = field(default_factory=dict)
    # How the device's stage times come about (its capabilities ``asc.timing``).
    timing: str = DEFAULT_TIMING

    def simulated(self, part: str | int) -> bool:
        return part in self.simulation


_PER_RUN = ("scenario", "repetition", "stream_samples", "amortised", "table_digest")


def _table_of(params: dict[str, Any]) -> str:
    """Which ``[[asc]]`` table a run belongs to: its recorded digest (older stores: the
    table's settings themselves)."""
    digest = params.get("table_digest")
    if digest:
        return str(digest)
    return json.dumps({k: v for k, v in params.items() if k not in _PER_RUN}, sort_keys=True,
                      default=str)


def asc_groups(store_path: Path | CampaignData, campaign_uid: str = "") -> list[AscGroup]:
    """The campaign's ASC runs, grouped by agent and table, metrics keyed by name."""
    data = (store_path if isinstance(store_path, CampaignData)
            else load_campaign_data(store_path, campaign_uid))
    groups: dict[tuple[str, str], AscGroup] = {}
    for run in data.runs:
        if not str(run["procedure"]).startswith("asc."):
            continue
        params = run["params"]
        key = (str(params.get("agent")), _table_of(params))
        if key not in groups:
            groups[key] = AscGroup(agent=key[0], params=params,
                                   timing=_device_timing(run, key[0]))
        group = groups[key]
        if run["status"] != "success":
            group.failed.append(f"{run['unit_key']}: {run['status']} {run['reason'] or ''}")
            continue
        metrics = run["metrics"]
        part: str | int = "single"
        if run["procedure"] == "asc.single_stream":
            group.single.append(metrics)
        elif run["procedure"] == "asc.power":
            part = int(params.get("stream_samples", 1))
            group.power.setdefault(part, []).append(metrics)
        if run.get("simulated"):
            group.simulation[part] = run.get("simulation") or "simulated"
    return list(groups.values())


def _device_timing(run: dict[str, Any], agent: str) -> str:
    """The line a device declares on how it times its stages (``capabilities.asc.timing``)."""
    caps = ((run.get("agents") or {}).get(agent) or {}).get("capabilities") or {}
    timing = (caps.get("asc") or {}).get("timing")
    return str(timing) if timing else DEFAULT_TIMING


def combine(runs: list[dict[str, dict[str, Any]]], name: str) -> Figure | None:
    """Mean of a metric over runs (trials), its uncertainty (common-mode instrument errors do
    not average out), and how far the furthest trial lies from the mean."""
    found = [r[name] for r in runs if name in r]
    if not found:
        return None
    unit = found[0]["unit"]
    values = [m["value"] for m in found]
    if any(v is None for v in values):
        reasons = {str((m.get("meta") or {}).get("reason", "")) for m in found}
        reason = "; ".join(sorted(r for r in reasons if r))
        return Figure(None, None, unit, len(found), reason=reason)
    mean = statistics.fmean(values)
    trials = tuple(values) if len(values) > 1 else ()
    return Figure(mean, mean_uncertainty(found), unit, len(found), trials,
                  meta=found[0].get("meta") or {})


def format_figure(fig: Figure | None) -> str:
    """``12.01 ± 0.11 W`` with an SI prefix chosen for the value; ``n/m`` when not measured."""
    if fig is None:
        return "—"
    if fig.value is None:
        return "n/m"
    return format_quantity(fig.value, fig.uncertainty, fig.unit)


def figure_cell(fig: Figure | None, simulated: bool, *, zero_note: str = "") -> Cell:
    """A figure as a table cell: its trials for the 5-trial rule, why it is missing, and
    (``zero_note``) what an uncertainty of exactly 0 means for it."""
    if fig is None:
        return EMPTY
    if fig.value is None:
        return Cell(None, unit=fig.unit, simulated=simulated,
                    missing=fig.reason or "not measured")
    notes = [zero_note] if fig.uncertainty == 0 and zero_note else []
    origin = origin_of(fig.meta)
    if origin is not None and origin.is_agent:  # never shown as a plain measured figure
        notes.append(origin.explain())
    if fig.uncertainty is None and fig.meta.get("uncertainty_note"):
        notes.append(str(fig.meta["uncertainty_note"]))
    return Cell(fig.value, fig.uncertainty, fig.unit, simulated=simulated, trials=fig.trials,
                note="; ".join(dict.fromkeys(notes)),
                label=origin.mark() if origin is not None else "")


def accuracy_cell(group: AscGroup) -> Cell:
    """Accuracy with its clip-aware 95 % interval, shown as an interval (it is not symmetric
    near 100 %: ``100 % (68–100 %)``, never ``100.00 ± 16.22 %``)."""
    fig = combine(group.single, "accuracy")
    if fig is None or fig.value is None:
        return figure_cell(fig, group.simulated("single"))
    lows = [(r["accuracy"].get("meta") or {}).get("interval95") for r in group.single]
    interval = None
    note = ""
    if len(lows) == 1 and lows[0]:
        interval = (float(lows[0][0]), float(lows[0][1]))
        meta = group.single[0]["accuracy"].get("meta") or {}
        note = (f"95 % interval over {meta.get('samples')} test samples from "
                f"{meta.get('clips')} clips (Wilson; the slices of one clip are correlated, so "
                "the clips set its width)")
    return Cell(fig.value, fig.uncertainty, kind="percent", simulated=group.simulated("single"),
                trials=fig.trials, interval=interval, note=note)


def _stream_label(stream: int, method: str = "repeat") -> str:
    if method == "single_stream":
        return "single stream over the test samples"
    return "one sample repeated" if stream == 1 else f"{stream} s streams, amortised"


def _method(group: AscGroup) -> str:
    return str(group.params.get("power_method") or "repeat")


def _zero_time_note(simulated: bool) -> str:
    where = "the simulated device's" if simulated else "the device's"
    return (f"standard error 0: every sample took exactly the same time by {where} timer "
            "(no spread to estimate an error from)")


COLUMNS = [Column("metric", key=True, align="left"), Column("pre-processing"),
           Column("inference")]


def asc_table(group: AscGroup, title: str) -> Table:
    """One agent's ASC figures in the layout of NeuroBench's Table 6."""
    table = Table(f"asc.table6/{group.agent}", title, list(COLUMNS))
    sim = group.simulated("single")
    table.add(Cell.of_text("accuracy (test split)"), accuracy_cell(group), Cell.of_text(""),
              ident="accuracy")
    zero = _zero_time_note(sim)
    table.add(Cell.of_text("execution time (mean ± s.e.)"),
              figure_cell(combine(group.single, "preprocess_time_s"), sim, zero_note=zero),
              figure_cell(combine(group.single, "inference_time_s"), sim, zero_note=zero),
              ident="execution time")
    for stream in sorted(group.power):
        runs = group.power[stream]
        label = _stream_label(stream, _method(group))
        sim = group.simulated(stream)
        idle = power_cell(runs, "idle_power_w", sim)
        source = power_source(runs)
        table.add(Cell.of_text(f"power: {label}" + (f" — {source}" if source else "")),
                  Cell.of_text(""), Cell.of_text(""), section=True, ident=f"power: {label}")
        table.add(Cell.of_text("execution time in power windows"),
                  *(figure_cell(combine(runs, f"loop_time_s.{s}"), sim,
                                zero_note=_zero_time_note(sim)) for s in STAGES),
                  ident=f"execution time in power windows ({label})")
        table.add(Cell.of_text("idle power"), idle, idle, ident=f"idle power ({label})")
        for title_, name in (
            ("active power", "active_power_w"),
            ("dynamic power", "dynamic_power_w"),
            ("dynamic energy / inference", "energy_per_inference_j"),
        ):
            table.add(Cell.of_text(title_),
                      *(power_cell(runs, f"{name}.{s}", sim) for s in STAGES),
                      ident=f"{title_} ({label})")
        if any(f"agent_active_power_w.{s}" in r for r in runs for s in STAGES):
            table.add(Cell.of_text("active power, agent's own report"),
                      *(_reported_cell(runs, s, sim) for s in STAGES),
                      ident=f"active power, agent's own report ({label})")
    table.notes += describe(group)
    return table


def power_cell(runs: list[dict[str, dict[str, Any]]], name: str, simulated: bool) -> Cell:
    """A power figure, and beside it every further instrument's figure of the same windows with
    its E_n; one that disagrees (E_n > 1) is named in the cell's label."""
    cell = figure_cell(combine(runs, name), simulated)
    metas = [(r.get(name) or {}).get("meta") for r in runs]
    text = disagreement_text(metas, lambda v, u: format_quantity(v, u, cell.unit))
    if cell.value is None or not text:
        return cell
    return replace(cell, note="; ".join(x for x in (cell.note, text) if x),
                   label=instruments_label(runs, name, cell.label))


def instruments_label(runs: list[dict[str, dict[str, Any]]], name: str, label: str = "") -> str:
    """A figure's label with every further instrument that disagrees with it named
    (``E_n > 1: dmm-c``): shown wherever the figure is, never without."""
    disagree = disagreeing_instruments([(r.get(name) or {}).get("meta") for r in runs])
    return "; ".join(x for x in (label, f"E_n > 1: {', '.join(disagree)}" if disagree else "")
                     if x)


def power_source(runs: list[dict[str, dict[str, Any]]]) -> str:
    """Where a power run's figures come from, named once (``simulated meter dmm``)."""
    return origins_text((r.get("idle_power_w") or {}).get("meta") for r in runs[:1])


def _reported_cell(runs: list[dict[str, dict[str, Any]]], stage: str, simulated: bool) -> Cell:
    """The agent's own report of a stage's active power beside the instrument's, with their
    agreement (E_n, ISO 13528)."""
    cell = figure_cell(combine(runs, f"agent_active_power_w.{stage}"), simulated)
    if cell.value is None:
        return cell
    found = [((r.get(f"agent_active_power_w.{stage}") or {}).get("meta") or {}).get(
        "agreement") or {} for r in runs]
    ens = [a["en"] for a in found if a.get("en") is not None]
    flagged = sum(bool(a.get("flagged")) for a in found)
    if flagged:
        agree = (f"DISAGREES with the instrument: E_n up to {max(ens):.2g} ({flagged}/"
                 f"{len(runs)} runs above 1)")
    elif ens:
        agree = f"agrees with the instrument: E_n ≤ {max(ens):.2g}"
    else:
        agree = "no E_n: " + next((a["reason"] for a in found if a.get("reason")),
                                  "no instrument figure beside it")
    return Cell(cell.value, cell.uncertainty, cell.unit, simulated=simulated,
                trials=cell.trials, label=cell.label, note=f"{cell.note}; {agree}")

def describe(group: AscGroup) -> list[str]:
    """The measurement description printed under the table."""
    p = group.params
    lines = []
    single = group.single[0] if group.single else {}
    if single:
        n = int(single["samples"]["value"])
        overhead = combine(group.single, "harness_overhead_median_s")
        p99 = combine(group.single, "harness_overhead_p99_s")
        lines.append(
            f"accuracy and execution time: single stream over {n} test samples "
            f"({len(group.single)} run(s)); samples in device memory before timing, one at a "
            f"time; {group.timing}; classification not timed"
        )
        if overhead and p99:
            lines.append(
                f"harness overhead per sample (round trip − device time): median "
                f"{format_figure(overhead)}, p99 {format_figure(p99)}"
            )
    data = "synthetic fixture" if p.get("fixture") else f"data set {p.get('data')}"
    model = p.get("model_description") or f"model {p.get('model', 'unstated')}"
    lines.append(f"workload: {data}, {p.get('sample_rate')} Hz, {model}")
    if not group.power:
        lines.append("power: not measured (power = false)")
    for stream in sorted(group.power):
        lines.append(_power_description(stream, group.power[stream], _method(group)))
    for failure in group.failed:
        lines.append(f"failed run: {failure}")
    for part, what in sorted(group.simulation.items(), key=str):
        which = ("single stream" if part == "single"
                 else f"power ({_stream_label(int(part), _method(group))})")
        lines.append(f"SIMULATED {which}: {what}")
    return lines


def _power_description(stream: int, runs: list[dict[str, dict[str, Any]]],
                       method: str = "repeat") -> str:
    idle = runs[0].get("idle_power_w", {})
    meta = idle.get("meta") or {}
    per = "window" if method == "single_stream" else "stage"
    head = (
        f"power ({_stream_label(stream, method)}, {len(runs)} run(s)): idle "
        f"{meta.get('idle_s')} s and active {meta.get('active_s')} s per {per} × "
        f"{meta.get('repetitions')} repetition(s); {meta.get('method')}"
    )
    if idle.get("value") is None:
        return f"{head}; not measured: {meta.get('reason', 'unknown reason')}"
    aperture = meta.get("aperture_s")
    if meta.get("category") == "on-board instrument":
        rails = idle.get("meta", {}).get("rails_w") or {}
        parts = [
            head,
            f"ON-BOARD INSTRUMENT: {meta.get('instrument')} ({meta.get('source')}), rails "
            + ", ".join(f"{r} {format_figure(Figure(w, None, 'W', 1))}"
                        for r, w in sorted(rails.items())) + " (idle)",
            "idle and active windows timed by the device, its readings spread over each",
            *(f"{stage}: its own rails {', '.join(r)} (active and idle readings of those)"
              for stage, r in sorted((meta.get("stage_rails") or {}).items())),
            str(meta.get("calibration", "")),
        ]
    else:
        parts = [
            head,
            f"instrument {meta.get('instrument')} ({meta.get('source')})",
            f"domains: {', '.join(meta.get('domains') or []) or 'unstated'}",
            f"sample interval {meta.get('sample_interval_s'):g} s"
            + (f", aperture {aperture:g} s" if aperture else ""),
            f"boundary readings: {meta.get('boundary')}",
            *([*_attribution_parts(meta["attribution"]), *marker_parts(runs)]
              if meta.get("attribution") else marker_parts(runs) or (
                f"timing ± {meta.get('timing_uncertainty_s'):.2g} s at most (each window its "
                "own phase's clock probe and meter start, independent)",
                "active window = device loop start..end mapped by the clock offset")),
        ]
    parts += [
        "dynamic = active − idle",
        "energy = dynamic power × mean single-stream time of the stage over the test set "
        "(device timers); the power-window loop time is shown beside it",
        "uncertainties 95 % expanded",
    ]
    if stream > 1:
        parts.append(f"AMORTISED: measured over {stream} s streams of consecutive samples at "
                     "batch size 1")
    for stage in STAGES:
        flags = {(r.get(f"energy_per_inference_j.{stage}", {}).get("meta") or {}).get("flag")
                 for r in runs}
        flags.discard(None)
        if flags:
            parts.append(f"FLAG {stage}: {'; '.join(sorted(flags))}")
    return "; ".join(parts)


def _attribution_parts(found: list[dict[str, Any]]) -> list[str]:
    """How stage power was separated in single-stream power windows."""
    shifts = ", ".join(
        f"{1e6 * float(a['shift_s']):+.0f} ± {1e6 * float(a['shift_std_error_s']):.2g} µs "
        f"(of ± {1e6 * float(a['max_shift_s']):.0f})" for a in found
        if a.get("alignment") != MARKER_CUT)  # marker-cut windows: marker_parts says how
    return [
        "each stage's active power attributed from the readings by when the device ran it "
        "(least squares on each reading's share of time in each stage; the time between "
        "samples is a state of its own)",
        *([f"readings aligned to the device clock by a fitted shift per window: {shifts}"]
          if shifts else []),
    ]


def tables(data: CampaignData) -> list[Table]:
    """One detail table per ASC table and agent (every power stream, the power windows' times,
    the agent's own report), its measurement description as notes; the systems' Table 6 is
    :func:`hilbench.workloads.asc.report.table6.tables`."""
    return [asc_table(group, f"{data.name}: ASC on {group.agent} in detail (pre-processing and "
                             "inference side by side, every power stream)")
            for group in asc_groups(data)]


def print_summary(store_path: Path, campaign_uid: str, console: Console, name: str) -> None:
    """Print the campaign's ASC tables (see :func:`hilbench.report.summary.print_summary`)."""
    from hilbench.report.summary import print_tables

    data = load_campaign_data(store_path, campaign_uid)
    data.name = name
    print_tables(tables(data), console)
