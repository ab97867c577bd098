"""Reading a stored figure the way a test checks it: the value a run measured, even where the
run overran its timeout and the figure is therefore kept out of every summary; and a fixed-timeout
run's power figure recomputed from the raw samples and events stored beside it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hilbench.cassette.figures import window_power_again
from hilbench.power.estimators import PowerEstimate


def measured(metric: dict[str, Any]) -> float | None:
    """The metric's value, or for an overrun run (stored without a value so that no table files
    it under the nominal timeout) the value it measured, kept in its meta."""
    meta = metric.get("meta") or {}
    if metric["value"] is None and meta.get("excluded") == "overrun":
        return meta["measured"]
    return metric["value"]


@dataclass
class PowerAgain:
    """A fixed-timeout QUBO run's ``avg_power_w`` and what the stored samples give again."""

    metrics: dict[str, dict[str, Any]]  # the run's stored metrics by name
    result: dict[str, Any]  # its solve_result event's data
    start: float  # the device's start, on the orchestrator's clock (stored offset)
    timeout: float
    sample_meta: dict[str, Any]  # the solve phase's first sample batch's meta
    again: PowerEstimate


def power_again(store: Any, run_uid: str, source: str, unit: str,
                agent: str = "cpu0") -> PowerAgain:
    """Recompute the run's power over its fixed runtime from the solve phase's stored samples of
    ``source``, their meta and interval records (stored stamps are nominal; a record of the
    instrument's real interval turns them into the stamps the figure used), the device's start
    mapped by the stored clock offset and the stored analysis inputs."""
    metrics = {m["name"]: m for m in store.metrics(run_uid)}
    solve = next(p for p in store.phases(run_uid) if p["name"] == "solve")
    result = store.events(run_uid, name="solve_result")[0]["data"]
    offset = solve["clock_offsets"][agent]["offset_s"]
    timeout = metrics["requested_s"]["value"]
    t, values = store.samples(run_uid, source, phase_uid=solve["uid"])
    records = [e["data"] for e in store.events(run_uid, "instrument_interval")
               if e["phase_uid"] == solve["uid"]]
    meta = next(store.sample_batches(run_uid, source, phase_uid=solve["uid"]))["meta"]
    again = window_power_again(t, values, source, unit, meta,
                               (result["t_start"], result["t_start"] + timeout), offset,
                               records, metrics["avg_power_w"]["meta"]["analysis"])
    return PowerAgain(metrics, result, result["t_start"] - offset, timeout, meta, again)
