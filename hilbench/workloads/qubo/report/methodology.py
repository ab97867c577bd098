"""How a campaign's QUBO runs were timed and their power measured, in sentences, from what
they stored (the report's methodology section; the QUBO plugin's ``methodology``)."""

from __future__ import annotations

import statistics
from typing import TYPE_CHECKING, Any

from hilbench.power.provenance import origin_of
from hilbench.report.methodology import seconds_text as _seconds
from hilbench.store import Store

if TYPE_CHECKING:
    from hilbench.report.campaign_data import CampaignData

RUNS_SAMPLED = 50  # QUBO runs whose clock probes and readings are summarised

PAPER_SEEDS = 5  # NeuroBench's QUBO workloads: seeds 0-4 per size and density


def _seeds_line(data: CampaignData) -> str:
    """How many seeds each QUBO figure is a mean over, beside the paper's five; fewer is said
    with what it costs."""
    seeds: dict[tuple[Any, Any], set[Any]] = {}
    for run in data.runs:
        params = run["params"]
        if str(run["procedure"]).startswith("qubo.") and "seed" in params:
            seeds.setdefault((params.get("nodes"), params.get("density")), set()).add(
                params["seed"])
    if not seeds:
        return ""
    fewest = min(len(s) for s in seeds.values())
    if fewest >= PAPER_SEEDS:
        return (f"seeds: {fewest} or more per graph size and density, as NeuroBench's QUBO "
                f"workloads use {PAPER_SEEDS} (seeds 0-{PAPER_SEEDS - 1})")
    return (f"seeds: FEWER THAN THE PAPER'S {PAPER_SEEDS}: as few as {fewest} per graph size "
            f"and density (the campaign file chose them, e.g. to keep a slow simulated solver's "
            f"campaign short); each mean over seeds is less certain than the paper's and is not "
            f"a NeuroBench-comparable figure until run with seeds 0-{PAPER_SEEDS - 1}")


def _qubo_observations(data: CampaignData, sampled: list[dict]) -> tuple[list, set, list]:
    """From the sampled runs: the clock probes' uncertainties, the power sources' resolutions
    and the meter timebase drifts seen."""
    probes: list[float] = []
    resolutions: set = set()
    drifts: list[float] = []
    with Store(data.path) as store:
        for run in sampled:
            for phase in store.phases(run["uid"]):
                if phase["name"] == "solve":
                    probes += [p["uncertainty_s"] for p in phase["clock_offsets"].values()]
            for source in store.sample_sources(run["uid"]):
                batch = next(store.sample_batches(run["uid"], source["source"]), None)
                if batch is not None:
                    meta = batch["meta"]
                    resolutions.add((source["source"], meta.get("instrument"),
                                     meta.get("time_resolution_s"), source["unit"],
                                     meta.get("supply_voltage_v")))
            drifts += [abs(e["data"].get("drift_ppm") or 0.0)
                       for e in store.events(run["uid"], "instrument_interval")]
    return probes, resolutions, drifts


def _qubo_power_lines(metrics: dict[str, Any], sampled: list[dict]) -> list[str]:
    """How average power was taken, and the agent's own report beside it."""
    lines: list[str] = []
    if "avg_power_w" in metrics:
        missing = next((r["metrics"]["avg_power_w"] for r in sampled
                        if "avg_power_w" in r["metrics"]
                        and r["metrics"]["avg_power_w"]["value"] is None), None)
        if missing is not None and (missing["meta"] or {}).get("reason"):
            lines.append(f"average power: n/m in some runs, e.g. {missing['meta']['reason']}")
        lines.append(
            "average power: mean of the readings of an instrument the orchestrator reads; "
            "fixed timeout: over the fixed runtime [start, start + timeout] (the agent's solve "
            "start mapped by the clock offset; a solver that stops early leaves its device in "
            "the system under test until the timeout), energy = average power × timeout; time "
            "to solution: over start..end of solving, energy = average power × actual time; "
            "readings straddling the edges excluded; uncertainties 95 % expanded (statistical, "
            "instrument gain and offset, timing, quantisation)")
    reported = next((r["metrics"]["agent_avg_power_w"] for r in sampled
                     if "agent_avg_power_w" in r["metrics"]), None)
    if reported is not None:
        origin = origin_of(reported["meta"])
        lines.append(
            "agent's own power report: "
            + (origin.explain() if origin is not None else "the agent's reading")
            + ", stored as agent_avg_power_w beside (never instead of) an instrument's "
            "figure, compared with it by E_n (ISO 13528) where both measured its window")
    return lines


def qubo_methodology(data: CampaignData) -> list[str]:
    """Timing and power of the campaign's fixed-timeout and time-to-solution runs."""
    lines: list[str] = []
    sampled = [r for r in data.runs if r["status"] == "success"
               and str(r["procedure"]).startswith("qubo.")][:RUNS_SAMPLED]
    if not sampled:
        return lines
    probes, resolutions, drifts = _qubo_observations(data, sampled)
    seeds_line = _seeds_line(data)
    if seeds_line:
        lines.append(seeds_line)
    metrics = sampled[0]["metrics"]
    rule = (metrics["overrun"]["meta"] or {}).get("rule") if "overrun" in metrics else None
    lines.append(
        "timing: the timed region is solving plus the cost check (set-up that does not depend "
        "on the deadline happens in the untimed load phase); each run stores the requested and "
        "the actual time from the agent's clock"
        + (f"; overrun flagged when {rule}" if rule else ""))
    if probes:
        lines.append(
            f"clock offsets: agent clock mapped onto the orchestrator's by ping/echo probes "
            f"before each solve phase; uncertainty (half the lowest round trip) median "
            f"{_seconds(statistics.median(probes))}, worst {_seconds(max(probes))} "
            f"(over {len(probes)} probes of {len(sampled)} runs)")
    for source, name, resolution, unit, volts in sorted(resolutions, key=str):
        text = f"power readings: source {source} ({name})"
        if resolution:
            text += f", one reading every {_seconds(resolution)} (time resolution)"
        if unit == "A" and volts:
            text += f", current × {volts:g} V supply"
        lines.append(text)
    lines += _qubo_power_lines(metrics, sampled)
    if drifts:
        lines.append(f"meter timebase: readings restamped with the interval learned from the "
                     f"meter's own count; largest drift seen {max(drifts):.3g} ppm")
    return lines
