"""The QUBO time-to-solution summary: per size × solver × gap, how many seeds reached the gap,
and the mean latency and energy to reach it (from stored metrics only).

Means are over the seeds that reached the gap (the leaderboard averages 5 seeds); the count
beside them says how many did. Energy carries the root-sum-square of the runs' expanded
uncertainties divided by the number of runs (the uncertainty of a mean of independent runs).
With several trials (repetitions) the figures carry their per-trial means for the 5-trial rule.
"""

from __future__ import annotations

import math
import statistics
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from hilbench.power.provenance import origins_text
from hilbench.report.campaign_data import CampaignData, load_campaign_data
from hilbench.report.table import Cell, Column, Table


@dataclass(frozen=True)
class TtsRow:
    nodes: int
    density: float
    solver: str
    gap: float
    runs: int
    reached: int
    mean_latency_s: float | None
    mean_energy_j: float | None
    energy_uncertainty_j: float | None
    simulated: bool = False
    trials: dict[str, tuple[float, ...]] = field(default_factory=dict)
    energy_source: str = ""  # where the energies come from (an instrument the orchestrator read)


_Hit = tuple[float | None, float | None, float | None, int]  # latency, energy, its U95, rep


def tts_rows(store_path: Path | CampaignData, campaign_uid: str = "") -> list[TtsRow]:
    data = (store_path if isinstance(store_path, CampaignData)
            else load_campaign_data(store_path, campaign_uid))
    groups: dict[tuple, list[_Hit]] = defaultdict(list)
    sources: dict[tuple, str] = {}
    simulated: set[tuple] = set()
    for run in data.runs:
        p = run["params"]
        if run["status"] != "success" or p.get("scenario") != "time_to_solution":
            continue
        metrics = run["metrics"]
        for gap in p.get("gaps", []):
            latency = metrics.get(f"tts_s@{gap:g}", {})
            energy = metrics.get(f"tts_energy_j@{gap:g}", {})
            key = (p["nodes"], p["density"], p["solver"], float(gap))
            groups[key].append((latency.get("value"), energy.get("value"),
                                energy.get("uncertainty"), int(p.get("repetition", 0))))
            if key not in sources and energy.get("value") is not None:
                sources[key] = origins_text([energy.get("meta")])
            if run.get("simulated"):
                simulated.add(key)
    rows = []
    for key in sorted(groups, key=lambda k: (k[0], k[1], k[2], -k[3])):
        runs = groups[key]
        hit = [r for r in runs if r[0] is not None]
        energies = [r for r in hit if r[1] is not None]
        complete = bool(energies) and len(energies) == len(hit)
        rows.append(
            TtsRow(
                *key,
                runs=len(runs),
                reached=len(hit),
                mean_latency_s=statistics.fmean(r[0] for r in hit) if hit else None,  # type: ignore[misc]
                mean_energy_j=statistics.fmean(r[1] for r in energies) if complete else None,  # type: ignore[misc]
                energy_uncertainty_j=(
                    math.sqrt(sum((r[2] or 0.0) ** 2 for r in energies)) / len(energies)
                    if complete
                    else None
                ),
                simulated=key in simulated,
                trials=_trials(hit, complete),
                energy_source=sources.get(key, ""),
            )
        )
    return rows


def _trials(hit: list[_Hit], with_energy: bool) -> dict[str, tuple[float, ...]]:
    reps = sorted({r[3] for r in hit})
    if len(reps) < 2:
        return {}
    out = {"latency": tuple(statistics.fmean(r[0] for r in hit if r[3] == rep)  # type: ignore[misc]
                            for rep in reps)}
    if with_energy:
        out["energy"] = tuple(statistics.fmean(r[1] for r in hit if r[3] == rep)  # type: ignore[misc]
                              for rep in reps)
    return out


def tts_table(rows: list[TtsRow], title: str) -> Table:
    table = Table("qubo.time_to_solution", title, [
        Column("nodes", key=True), Column("dens.", key=True),
        Column("solver", key=True, align="left"), Column("gap", key=True),
        Column("reached"), Column("latency", unit="s"), Column("energy", unit="J"),
    ])
    for r in rows:
        table.add(
            Cell.of_text(str(r.nodes)), Cell.of_text(f"{r.density:g}"), Cell.of_text(r.solver),
            Cell.of_text(f"{r.gap:g}"), Cell.of_text(f"{r.reached}/{r.runs}"),
            Cell(r.mean_latency_s, unit="s", prefix=False, simulated=False,
                 trials=r.trials.get("latency", ()),
                 missing="no seed reached this gap" if r.mean_latency_s is None else ""),
            Cell(r.mean_energy_j, r.energy_uncertainty_j, "J", prefix=False,
                 simulated=r.simulated, trials=r.trials.get("energy", ()),
                 missing="energy not measured" if r.mean_energy_j is None
                 and r.mean_latency_s is not None else ""),
        )
    table.notes.append("latency and energy: mean over the seeds that reached the gap "
                       "(as the solver reported reaching it); energy ± 95 % expanded "
                       "uncertainty of that mean, integrated from the start of solving")
    found = sorted({r.energy_source for r in rows if r.energy_source})
    if found:
        table.notes.append(f"energy source: {'; '.join(found)}")
    return table


def tables(data: CampaignData) -> list[Table]:
    rows = tts_rows(data)
    if not rows:
        return []
    return [tts_table(rows, f"{data.name}: time and energy to solution, mean over seeds")]
