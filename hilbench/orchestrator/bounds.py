"""Campaigns bounded before anything starts: how many runs, about how long, how much memory.

`hilbench campaign check` and `hilbench run` (and the daemon, when it queues a file) ask
:func:`bound_campaign` before a store is opened or a process started. It refuses, naming the
file and key, what the host's memory or a driver's declared limits cannot hold: a campaign of
10⁸ runs would fill memory with its own bookkeeping, and a 10⁷-node QUBO would try to allocate
90 TiB. Nothing here names a procedure or a driver:

- a procedure may give :attr:`Procedure.count` (its units per repetition of one table, without
  making them), else its units are made for one repetition and counted;
- a unit may answer ``needs(limits) -> UnitNeeds``: its memory, its time budget, and whether
  the limits its agent's driver declares allow it;
- a driver class may declare ``declared_limits() -> dict`` (a classmethod: no device is
  touched), the same limits it reports in its capabilities. They are applied to agents that
  hilbench spawns on this host; a remote agent's driver checks its own at load.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING, Any

from hilbench.entry_points import entry_points
from hilbench.orchestrator.campaign_errors import CampaignError
from hilbench.orchestrator.eta import OVERHEAD_PER_RUN_S, duration_text
from hilbench.orchestrator.procedure import load_procedure

if TYPE_CHECKING:
    from hilbench.orchestrator.campaign import Campaign

log = logging.getLogger(__name__)

# What the orchestrator holds per run whatever the workload: the unit, its key, the resume
# set (about 400 bytes measured for a QUBO unit and its key; this leaves a margin).
BYTES_PER_RUN = 1024
DRIVER_GROUP = "hilbench.drivers"


@dataclass(frozen=True)
class UnitNeeds:
    """What one run needs, known before it starts."""

    memory_bytes: int = 0  # the largest data the orchestrator holds for it
    seconds: float = 0.0  # its budget (a solver timeout, a stream); overhead not counted
    key: str = ""  # the table key that sets memory_bytes, named when it is too much
    refusal: str | None = None  # why the driver's declared limits rule it out


@dataclass(frozen=True)
class CampaignBounds:
    """A campaign's size, as `campaign check` and `run` print it."""

    runs: int
    budget_s: float  # the units' own budgets, summed
    unit_memory: int  # the most any one unit needs
    bookkeeping: int  # what the orchestrator holds for all runs
    unbudgeted: int = 0  # runs whose unit states no time budget (ASC, a search to a limit)

    @property
    def seconds(self) -> float:
        """The model's figure for the runs that state a budget (the others are not known)."""
        return self.budget_s + (self.runs - self.unbudgeted) * OVERHEAD_PER_RUN_S

    def summary(self) -> str:
        """Before anything runs, a model only: `run` refines it from the store's history of
        the same unit shapes and from its own runs (:mod:`hilbench.orchestrator.eta`)."""
        model = (f"model: budgets {duration_text(self.budget_s)} + ~"
                 f"{OVERHEAD_PER_RUN_S * 1e3:.0f} ms per run")
        if self.unbudgeted == self.runs:
            time = ("duration not known before they run (no unit states a time budget; `run` "
                    "estimates it from stored runs of the same shape, else from its first runs)")
        elif self.unbudgeted:
            time = (f"at least {duration_text(self.seconds)} ({model} for the "
                    f"{self.runs - self.unbudgeted} that state a budget; {self.unbudgeted} "
                    "state none)")
        else:
            time = f"about {duration_text(self.seconds)} ({model})"
        return f"{self.runs} run(s), {time}, a unit needs up to {bytes_text(self.unit_memory)}"


def host_memory() -> int:
    """Physical memory of this host, bytes."""
    import psutil

    return int(psutil.virtual_memory().total)


def bound_campaign(campaign: Campaign, *, memory: int | None = None) -> CampaignBounds:
    """Count, time and size the campaign without making more than one repetition of units;
    CampaignError (one line per problem, file and key named) when it cannot be held."""
    memory = host_memory() if memory is None else memory
    source = campaign.source or campaign.name
    reps = campaign.repetitions
    one_rep = dataclasses.replace(campaign, repetitions=1)
    problems: list[str] = []
    per_table: list[tuple[str, int, Any, int]] = []  # (name, index, table, units per rep)
    for name, tables in campaign.tables.items():
        procedure = load_procedure(name)
        for i, table in enumerate(tables):
            count = getattr(procedure, "count", None)
            per_rep = count(table) if count is not None else len(
                procedure.expand([table], one_rep))
            per_table.append((name, i, table, per_rep))
    runs = sum(n for *_, n in per_table) * reps
    bookkeeping = runs * BYTES_PER_RUN
    if bookkeeping > memory // 2:
        per_rep = runs // reps
        where = (f"{source} [campaign] repetitions" if reps > 1
                 else f"{source} [[{per_table[0][0]}]]")
        problems.append(
            f"{where}: {reps} × {per_rep} unit(s) = {runs} runs; keeping track of them needs "
            f"~{bytes_text(bookkeeping)}, more than half of this host's "
            f"{bytes_text(memory)} (at most {memory // 2 // BYTES_PER_RUN} runs per campaign)"
        )
        raise CampaignError(problems)
    budget = 0.0
    unbudgeted = 0
    largest = 0
    for name, i, table, _ in per_table:
        limits = _limits_for(campaign, table.agent)
        driver = next((f"driver {a.driver} of agent {a.id}" for a in campaign.agents
                       if a.id == table.agent), "its driver")
        named: set[str] = set()
        for unit in load_procedure(name).expand([table], one_rep):
            needs_of = getattr(unit, "needs", None)
            if needs_of is None:
                unbudgeted += reps
                continue
            needs = needs_of(limits)
            budget += needs.seconds * reps
            unbudgeted += reps if needs.seconds <= 0 else 0
            where = f"{source} [[{name}]] #{i + 1} {needs.key}".rstrip()
            if needs.refusal and needs.key not in named:
                named.add(needs.key)
                problems.append(f"{where}: {needs.refusal} ({driver})")
            elif needs.memory_bytes > memory // 2 and needs.key not in named:
                named.add(needs.key)
                problems.append(
                    f"{where}: a unit needs ~{bytes_text(needs.memory_bytes)}, more than half "
                    f"of this host's {bytes_text(memory)}"
                )
            largest = max(largest, needs.memory_bytes)
    if problems:
        raise CampaignError(problems)
    return CampaignBounds(runs, budget, largest, bookkeeping, unbudgeted)


def _limits_for(campaign: Campaign, agent_id: str) -> Mapping[str, Any] | None:
    """The limits the driver of a spawned agent declares; None when not known here."""
    spec = next((a for a in campaign.agents if a.id == agent_id), None)
    if spec is None or not spec.spawn or spec.python is not None:
        return None  # it runs elsewhere or in another environment: it checks its own
    return driver_limits(spec.driver)


@cache
def driver_limits(driver: str) -> Mapping[str, Any] | None:
    """``declared_limits()`` of the driver class registered as ``driver`` (no instance made)."""
    for ep in entry_points(group=DRIVER_GROUP):
        if ep.name != driver:
            continue
        try:
            declared = getattr(ep.load(), "declared_limits", None)
            return None if declared is None else dict(declared())
        except Exception as exc:  # a driver that cannot load here is checked where it runs
            log.info("driver %s: no declared limits here (%s)", driver, exc)
            return None
    return None


def bytes_text(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if n < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    raise AssertionError
