"""`hilbench bench eta STORE`: how wrong the campaign ETA would have been, replayed over the
campaigns a store recorded.

Each campaign is replayed in the order its runs ended, with the estimator of
:mod:`hilbench.orchestrator.eta` knowing only what it would have known then: the store's runs of
campaigns that had ended before this one began, the budgets its units state, and this
campaign's runs so far. After each run from the first tenth of the campaign on, the ETA it gives
is compared with the time the campaign really took from there (pauses between a stop and a
resume not counted): relative error |ETA − actual| / actual. Only campaigns that ran to their
end are replayed (a running or stopped one's remaining time was never seen whole); their runs
still count as history for later ones. The last line is the headline:
median and 90th percentile over every such point of every campaign.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click
import numpy as np

from hilbench.orchestrator.eta import (
    Estimator,
    StoredRun,
    campaign_slots,
    history_slots,
    stored_costs,
    stored_runs,
    unit_work,
)

GOAL_MEDIAN = 0.20  # issue 34: median ETA error after the first tenth of a campaign
ENDED = ("success", "fail")  # campaigns that ran to their end: their remaining time is known


@dataclass(frozen=True)
class Replay:
    """One campaign's replay: its relative errors after the first tenth."""

    uid: str
    name: str
    runs: int
    history_runs: int  # stored runs of earlier campaigns the estimator knew
    errors: list[float]


def unit_budgets(config: Mapping[str, Any]) -> dict[str, float]:
    """Unit key -> the budget it states, rebuilt from a stored campaign's config; empty when
    the config cannot be rebuilt here (a procedure not installed, an older layout)."""
    return declared(config)[0]


def declared(config: Mapping[str, Any]) -> tuple[dict[str, float], dict[str, Any]]:
    """Unit key -> the budget it states, and unit key -> the unit, when it declares its work
    (:func:`hilbench.orchestrator.eta.unit_work`), rebuilt from a stored campaign's config
    (both empty when it cannot be rebuilt here)."""
    from hilbench.orchestrator.campaign import Campaign
    from hilbench.orchestrator.eta import unit_budget
    from hilbench.orchestrator.procedure import TableContext, load_procedure

    try:
        ids = tuple(str(a["id"]) for a in config.get("agents", []))
        context = TableContext(agent_ids=ids, base_dir=Path.cwd())
        tables = {name: tuple(load_procedure(name).table.model_validate(t, context=context)
                              for t in dumps)
                  for name, dumps in dict(config.get("tables", {})).items()}
        campaign = Campaign(name=str(config.get("name", "")),
                            repetitions=int(config.get("repetitions", 1)), agents=(),
                            tables=tables)
        budgets, works = {}, {}
        for name, procedure_tables in tables.items():
            for unit in load_procedure(name).expand(list(procedure_tables), campaign):
                budget = unit_budget(unit)
                if budget is not None:
                    budgets[str(unit.key)] = budget
                if unit_work(unit) is not None:
                    works[str(unit.key)] = unit
        return budgets, works
    except Exception:  # the replay goes on without them: history and its own runs
        return {}, {}


def replay_campaign(runs: Sequence[StoredRun], earlier: Sequence[StoredRun],
                    budgets: Mapping[str, float],
                    works: Mapping[str, Any] | None = None) -> list[float]:
    """Relative ETA errors at each run from the first tenth of ``runs`` (one campaign, in
    order) on, with ``earlier`` as the store's history and the budgets and work the units
    declare (by unit key)."""
    works = works or {}
    history = stored_costs(history_slots(earlier))
    shape_budgets: dict[Any, float | None] = {}
    for run in runs:
        shape_budgets.setdefault(run.shape, budgets.get(run.unit_key))
    shape_works: dict[Any, Any] = {}
    for run in runs:
        if run.unit_key in works:
            shape_works.setdefault(run.shape,
                                   lambda caps, unit=works[run.unit_key]: unit_work(unit, caps))
    estimator = Estimator(Counter(run.shape for run in runs), shape_budgets, history,
                          works=shape_works)
    slots = campaign_slots(runs)
    cost = working_costs(runs, slots)
    left_after = [*np.cumsum(cost[::-1])[::-1].tolist(), 0.0]  # left_after[i]: from run i on
    first = max(1, math.ceil(len(runs) / 10))
    errors = []
    for i, (run, slot) in enumerate(zip(runs, slots, strict=True), start=1):
        estimator.learn(run.agents)  # what the handshake stored with the run says
        estimator.done(run.shape, slot, run.end - run.start)
        actual = left_after[i]
        if i < first or actual <= 0:
            continue
        eta = estimator.estimate().seconds
        errors.append(math.inf if eta is None else abs(eta - actual) / actual)
    return errors


def working_costs(runs: Sequence[StoredRun], slots: Sequence[float | None]) -> list[float]:
    """What each run's unit really cost the campaign: its slot, or where none was measured (the
    first run, a run after a pause) its duration + the median overhead of its shape's runs."""
    overheads: dict[Any, list[float]] = defaultdict(list)
    for run, slot in zip(runs, slots, strict=True):
        if slot is not None:
            overheads[run.shape].append(slot - (run.end - run.start))
    every = [o for values in overheads.values() for o in values]
    fallback = float(np.median(every)) if every else 0.0
    return [slot if slot is not None else
            (run.end - run.start) + (float(np.median(overheads[run.shape]))
                                     if overheads.get(run.shape) else fallback)
            for run, slot in zip(runs, slots, strict=True)]


def replay_store(store_path: str | Path) -> list[Replay]:
    """Every campaign of the store, oldest first, replayed."""
    from hilbench.store import Store

    runs = stored_runs(store_path)
    by_campaign: dict[str, list[StoredRun]] = defaultdict(list)
    for run in runs:
        by_campaign[run.campaign_uid].append(run)
    with Store(store_path) as store:
        campaigns = {c["uid"]: c for c in store.campaigns()}
    ordered = sorted(by_campaign.values(), key=lambda rs: min(r.start for r in rs))
    out = []
    for campaign_runs in ordered:
        campaign_runs.sort(key=lambda r: r.end)
        uid = campaign_runs[0].campaign_uid
        info = campaigns.get(uid, {})
        if info.get("status") not in ENDED:
            continue  # still running, or stopped: its remaining time was never seen whole
        began = campaign_runs[0].start
        earlier = [r for rs in ordered if rs is not campaign_runs
                   and max(x.end for x in rs) <= began for r in rs]
        budgets, works = declared(info.get("config") or {})
        out.append(Replay(uid, str(info.get("name", "?")), len(campaign_runs), len(earlier),
                          replay_campaign(campaign_runs, earlier, budgets, works)))
    return out


def _figures(errors: Sequence[float]) -> str:
    if not errors:
        return "no point after the first tenth"
    e = np.asarray(errors)
    return (f"median {np.median(e) * 100:.1f} %, 90th percentile "
            f"{np.percentile(e, 90) * 100:.1f} % over {len(e)} ETA(s)")


@click.command()
@click.argument("store", type=click.Path(exists=True, dir_okay=False, path_type=Path))
def eta(store: Path) -> None:
    """Replay the ETAs `run` and the daemon would have given over STORE's campaigns and
    print their relative error after the first tenth of each campaign."""
    from hilbench.store import StoreError

    try:
        replays = replay_store(store)
    except StoreError as exc:
        raise click.ClickException(str(exc)) from None
    if not replays:
        raise click.ClickException(f"{store}: no campaign that ran to its end to replay")
    for r in replays:
        click.echo(f"campaign {r.uid[:8]} {r.name}: {r.runs} run(s), history "
                   f"{r.history_runs} run(s): {_figures(r.errors)}")
    pooled = [e for r in replays for e in r.errors]
    click.echo(f"ETA error after the first tenth, all {len(replays)} campaign(s): "
               f"{_figures(pooled)} (goal: median ≤ {GOAL_MEDIAN * 100:.0f} %)")
