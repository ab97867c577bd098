"""The QUBO workload's NeuroBench leaderboard rows (``WorkloadPlugin.leaderboard``; see
:mod:`hilbench.report.leaderboard`): one row per solver and workload with the time and energy to
90 / 95 / 99 % of the target (BKS-gap 0.1, 0.05, 0.01) averaged over the seeds that reached it,
and the solver's largest workload at 1 % density and fully connected."""

from __future__ import annotations

from typing import Any

from hilbench.report.campaign_data import CampaignData
from hilbench.report.trials import trial_fields
from hilbench.workloads.qubo.report.largest_table import largest_rows
from hilbench.workloads.qubo.report.tts_table import TtsRow, tts_rows

GAPS = ((0.1, 90), (0.05, 95), (0.01, 99))  # BKS-gap -> % of target optimality
LARGEST_DENSITIES = ((0.01, "1pct"), (1.0, "fully_connected"))

ORDER = 1  # after a campaign's ASC rows, as the leaderboard listed them
ENTRIES = "QUBO time-to-solution / largest-workload"  # what the "no rows" message names
NOTE = "a fixed-timeout sweep alone is not a leaderboard entry"
UNITS: dict[str, str] = {
    **{f"qubo_{what}_{pct}pct_{unit}": unit for _, pct in GAPS
       for what, unit in (("time_to", "s"), ("energy_to", "j"), ("energy_to_u95", "j"))},
    **{f"qubo_largest_nodes_{label}": "1" for _, label in LARGEST_DENSITIES},
}


def rows(data: CampaignData) -> list[dict[str, Any]]:
    """One row per solver and workload the campaign timed to the target, and one per solver
    with a largest workload alone."""
    return qubo_rows(tts_rows(data), largest_rows(data))


def qubo_rows(tts: list[TtsRow], largest: list[dict[str, Any]]) -> list[dict[str, Any]]:
    by_solver: dict[str, dict[str, Any]] = {}
    for entry in largest:
        fields = by_solver.setdefault(entry["solver"], {})
        for density, label in LARGEST_DENSITIES:
            if abs(entry["density"] - density) < 1e-9:
                fields[f"qubo_largest_nodes_{label}"] = entry["nodes"]
                fields["_simulated"] = fields.get("_simulated", False) or entry["simulated"]
    workloads: dict[tuple[str, int, float], dict[float, TtsRow]] = {}
    for r in tts:
        workloads.setdefault((r.solver, r.nodes, r.density), {})[r.gap] = r
    out = []
    seen: set[str] = set()
    for (solver, nodes, density), gaps in sorted(workloads.items()):
        row: dict[str, Any] = {"benchmark": "qubo", "entry": solver, "qubo_nodes": nodes,
                               "qubo_density": density}
        trials: list[tuple[float, ...]] = []
        simulated = False
        seeds = []
        sources = sorted({r.energy_source for r in gaps.values() if r.energy_source})
        row["qubo_energy_source"] = "; ".join(sources) or None
        for gap, pct in GAPS:
            hit = gaps.get(gap)
            row[f"qubo_time_to_{pct}pct_s"] = hit.mean_latency_s if hit else None
            row[f"qubo_energy_to_{pct}pct_j"] = hit.mean_energy_j if hit else None
            row[f"qubo_energy_to_u95_{pct}pct_j"] = hit.energy_uncertainty_j if hit else None
            if hit:
                seeds.append(f"{hit.reached}/{hit.runs}")
                trials += list(hit.trials.values())
                simulated = simulated or hit.simulated
        row["qubo_seeds_reached"] = " ".join(seeds)
        extra = by_solver.get(solver, {})
        row.update({k: v for k, v in extra.items() if not k.startswith("_")})
        row["simulated"] = simulated or extra.get("_simulated", False)
        row.update(trial_fields(trials))
        out.append(row)
        seen.add(solver)
    for solver, extra in sorted(by_solver.items()):
        if solver not in seen:
            out.append({"benchmark": "qubo", "entry": solver,
                        **{k: v for k, v in extra.items() if not k.startswith("_")},
                        "simulated": extra.get("_simulated", False),
                        **trial_fields([])})
    return out
