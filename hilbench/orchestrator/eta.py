"""How long a campaign still takes, and what that figure rests on: one estimator for `run`'s
progress line, the daemon's `status` and `hilbench bench eta`.

A unit's cost is its *slot*: the wall time from the end of the unit before it to its own end,
so the orchestrator's work between runs (documents, the next unit's target, the agent's load)
is counted, not only the run's own start-to-stop. A unit's shape is its procedure, its unit
group (the key with seed and repetition blanked: size, timeout, solver …) and its device (the
agent the campaign runs it on). For each shape still to run the estimator takes, in order:

1. this campaign's own mean slot of that shape, once it has :data:`OWN_RUNS_TRUSTED` of them;
2. the median slot of the store's runs of the same shape (earlier campaigns);
3. a model, when the unit states a budget (a solver timeout): budget + the overhead per unit
   measured so far in this campaign (slot − budget), else :data:`OVERHEAD_PER_RUN_S`;
4. a model, when the unit states its work (:class:`UnitWork`: windows timed by the clock and
   samples processed one at a time, as an ASC table declares them): the windows + samples ×
   the per-sample cost measured on this campaign's runs once the first of them ends (its own
   run time when its slot holds the start-up) + the overhead per unit; a unit whose samples
   are not known before its data loads takes the variable cost measured on a run of its
   procedure;
5. this campaign's mean slot over all shapes seen so far;

and says how many units each basis covered. Its error is measured, not claimed:
`hilbench bench eta` replays it over a store's recorded campaigns.
"""

from __future__ import annotations

import statistics
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hilbench.store.groups import replicate_key

OWN_RUNS_TRUSTED = 3
# The orchestrator's own time per run beside a unit's budget when nothing was measured yet
# (about 14 ms for a 1 ms QUBO unit on the simulated bench, 2 cores).
OVERHEAD_PER_RUN_S = 0.015
# A gap between two stored runs longer than this beyond the run itself is a pause (a resume,
# a stop): not a slot.
PAUSE_S = 30.0

Shape = tuple[str, str, str]  # (procedure, unit group, device)


def shape_of(procedure: str, unit_key: str, device: str) -> Shape:
    return (procedure, replicate_key(unit_key), device)


def unit_shape(unit: Any) -> Shape:
    """A campaign unit's shape (its agent id names the device)."""
    return shape_of(unit.procedure, str(unit.key), str(unit.agent))


def unit_budget(unit: Any) -> float | None:
    """The time budget a unit states before it runs (``needs().seconds``), else None."""
    needs = getattr(unit, "needs", None)
    if needs is None:
        return None
    try:
        seconds = float(needs(None).seconds)
    except Exception:  # a unit that cannot say is estimated from history or this campaign
        return None
    return seconds if seconds > 0 else None


@dataclass(frozen=True)
class UnitWork:
    """What a unit declares it will do before it runs: ``fixed_s`` of windows its clock times
    (idle and active power windows) and ``samples`` processed one at a time, whose cost the
    estimator measures (None: known only once the unit's data set is loaded)."""

    fixed_s: float = 0.0
    samples: int | None = 0


def unit_work(unit: Any, capabilities: Mapping[str, Any] | None = None) -> UnitWork | None:
    """The work a unit declares (``work(capabilities)``: its agent's handshake capabilities
    once a run has stored them, else None), else None."""
    work = getattr(unit, "work", None)
    if work is None:
        return None
    try:
        found = work(capabilities)
    except Exception:  # a unit that cannot say is estimated from history or this campaign
        return None
    return found if isinstance(found, UnitWork) else None


def run_device(agents: Any) -> str:
    """A stored run's device: the agent id(s) it ran on, as the campaign named them."""
    return ",".join(sorted(agents)) if isinstance(agents, Mapping) else ""


@dataclass(frozen=True)
class StoredRun:
    """What the estimator needs of one stored run."""

    campaign_uid: str
    shape: Shape
    unit_key: str
    start: float  # wall-clock seconds
    end: float
    agents: Mapping[str, Any] = field(default_factory=dict, compare=False)  # its handshake


def stored_runs(store_path: str | Path | Any) -> list[StoredRun]:
    """Every stored run that stopped (success or fail), in the order it ran."""
    from hilbench.store import Store

    with Store(store_path) as store:
        rows = store.runs()
    out = []
    for r in rows:
        if r["duration_s"] is None or r["status"] not in ("success", "fail"):
            continue
        out.append(StoredRun(r["campaign_uid"],
                             shape_of(r["procedure"], r["unit_key"], run_device(r["agents"])),
                             r["unit_key"], r["wall_time"], r["wall_time"] + r["duration_s"],
                             r["agents"] if isinstance(r["agents"], Mapping) else {}))
    return out


def campaign_slots(runs: Sequence[StoredRun]) -> list[float | None]:
    """Each run's slot (end of the run before it to its own end) within one campaign, in run
    order; None for a first run and after a pause (its slot would count the start-up)."""
    slots: list[float | None] = []
    for i, run in enumerate(runs):
        if i == 0:
            slots.append(None)
            continue
        slot = run.end - runs[i - 1].end
        slots.append(slot if slot <= (run.end - run.start) + PAUSE_S else None)
    return slots


def history_slots(runs: Iterable[StoredRun]) -> dict[Shape, list[float]]:
    """Slots of stored runs per shape (runs grouped by campaign, each in its own order):
    :func:`stored_costs` sums them up for an :class:`Estimator`."""
    by_campaign: dict[str, list[StoredRun]] = defaultdict(list)
    for run in runs:
        by_campaign[run.campaign_uid].append(run)
    out: dict[Shape, list[float]] = defaultdict(list)
    for campaign in by_campaign.values():
        campaign.sort(key=lambda r: r.end)
        for run, slot in zip(campaign, campaign_slots(campaign), strict=True):
            if slot is not None:
                out[run.shape].append(slot)
    return dict(out)


Stored = Mapping[Shape, tuple[float, int]]  # shape -> (median slot s, stored runs)


def stored_costs(slots: Mapping[Shape, Sequence[float]]) -> dict[Shape, tuple[float, int]]:
    return {shape: (statistics.median(s), len(s)) for shape, s in slots.items() if s}


def store_history(store_path: str | Path | Any) -> dict[Shape, tuple[float, int]]:
    """What the store's runs say each shape costs; nothing when the store cannot be read
    (then the model and the campaign's own runs)."""
    from hilbench.store import StoreError

    try:
        return stored_costs(history_slots(stored_runs(store_path)))
    except StoreError:
        return {}


@dataclass(frozen=True)
class Estimate:
    seconds: float | None  # None: nothing known yet for some unit
    basis: str
    units_by_basis: Mapping[str, int] = field(default_factory=dict)  # own/stored/model/mean

    def text(self) -> str:
        """The figure and its basis in full (the run log, `status`)."""
        if self.seconds is None:
            return f"ETA unknown ({self.basis})"
        return f"about {duration_text(self.seconds)} left ({self.basis})"

    def short(self) -> str:
        """For a progress line: the figure and how many units each basis covered ("" when
        nothing is left)."""
        if not any(self.units_by_basis.values()):
            return ""
        figure = "ETA ?" if self.seconds is None else f"~{duration_text(self.seconds)} left"
        counts = ", ".join(f"{n} {SHORT[b]}" for b, n in self.units_by_basis.items() if n)
        return f"{figure} ({counts})" if counts else figure


SHORT = {"own": "measured", "stored": "stored", "model": "model", "work": "model",
         "pending": "unmeasured", "mean": "mean", "nothing": "unknown"}


def duration_text(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f} s" if seconds >= 1 else f"{seconds * 1e3:.0f} ms"
    minutes = seconds / 60
    if minutes < 120:
        return f"{minutes:.0f} min"
    hours = minutes / 60
    return f"{hours:.1f} h" if hours < 48 else f"{hours / 24:.1f} days"


@dataclass
class Estimator:
    """Units left per shape, what history and this campaign say each costs."""

    left: Counter[Shape]
    budgets: dict[Shape, float | None]
    history: Stored = field(default_factory=dict)
    own: dict[Shape, list[float]] = field(default_factory=lambda: defaultdict(list))
    # shape -> how to ask a unit of that shape for its declared work given its agent's
    # capabilities (asked when estimating: a unit's samples are known once its data set has
    # loaded, its agent's capabilities once a run has stored its handshake)
    works: dict[Shape, Any] = field(default_factory=dict)
    capabilities: dict[str, Mapping[str, Any]] = field(default_factory=dict)  # by agent id
    _overheads: list[float] = field(default_factory=list)
    _per_sample: list[float] = field(default_factory=list)  # s per sample, one per run
    # slot − declared windows of runs of windows alone: the overhead beside them, or less
    # than none when the device runs fewer windows than declared (a stage it cannot time)
    _beside_windows: list[float] = field(default_factory=list)
    _variable: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))

    @classmethod
    def for_units(cls, units: Iterable[Any], history: Stored) -> Estimator:
        """From a campaign's units still to run (objects with procedure, key, agent, and
        optionally needs())."""
        left: Counter[Shape] = Counter()
        budgets: dict[Shape, float | None] = {}
        works: dict[Shape, Any] = {}
        for unit in units:
            shape = unit_shape(unit)
            left[shape] += 1
            budgets.setdefault(shape, unit_budget(unit))
            if getattr(unit, "work", None) is not None:
                works.setdefault(shape, lambda caps, unit=unit: unit_work(unit, caps))
        return cls(left, budgets, history, works=works)

    def done(self, shape: Shape, slot_s: float | None, run_s: float | None = None) -> None:
        """A unit of ``shape`` ended ``slot_s`` after the one before it (None: the first
        after a start, whose slot holds the start-up: counted, not measured). ``run_s``, the
        run's own start-to-stop, measures a declared unit's per-sample cost when it has no
        slot (the campaign's first run)."""
        if self.left[shape] > 0:
            self.left[shape] -= 1
        self._measure_work(shape, slot_s if slot_s is not None else run_s, slot_s is not None)
        if slot_s is None:
            return
        self.own[shape].append(slot_s)
        budget = self.budgets.get(shape)
        if budget is not None:
            self._overheads.append(slot_s - budget)

    def work(self, shape: Shape) -> UnitWork | None:
        """The work a unit of ``shape`` declares now (None: it declares none)."""
        return self._work(shape)

    def learn(self, agents: Mapping[str, Any]) -> None:
        """A stored run's handshake: its agents' capabilities (what a device can time)."""
        for agent, info in agents.items():
            caps = info.get("capabilities") if isinstance(info, Mapping) else None
            if isinstance(caps, Mapping):
                self.capabilities[str(agent)] = caps

    def _work(self, shape: Shape) -> UnitWork | None:
        ask = self.works.get(shape)
        return None if ask is None else ask(self.capabilities.get(shape[2]))

    def _measure_work(self, shape: Shape, cost: float | None, is_slot: bool) -> None:
        """What a declared unit's run says of the per-sample cost (or, for windows alone, of
        the overhead per unit beside them)."""
        work = self._work(shape)
        if work is None or cost is None:
            return
        variable = cost - work.fixed_s
        if work.samples is None:
            self._variable[shape[0]].append(max(0.0, variable))
        elif work.samples > 0:
            self._per_sample.append(max(0.0, variable) / work.samples)
        elif is_slot:
            self._beside_windows.append(variable)

    def unit_cost(self, shape: Shape) -> tuple[float | None, str]:
        """One unit's expected slot and the basis's name."""
        own = self.own.get(shape, ())
        if len(own) >= OWN_RUNS_TRUSTED:
            return sum(own) / len(own), "own"
        stored = self.history.get(shape)
        if stored is not None:
            return stored[0], "stored"
        budget = self.budgets.get(shape)
        if budget is not None:
            return budget + self._overhead(), "model"
        work = self._work(shape)
        if work is not None:
            return self._work_cost(shape, work)
        seen = [s for slots in self.own.values() for s in slots]
        if seen:
            return sum(seen) / len(seen), "mean"
        return None, "nothing"

    def _work_cost(self, shape: Shape, work: UnitWork) -> tuple[float | None, str]:
        """Declared windows + samples × the measured per-sample cost (overhead included in
        it: it was measured on whole runs), or windows + the overhead per unit."""
        if work.samples == 0:
            beside = (statistics.median(self._beside_windows) if self._beside_windows
                      else self._overhead())
            return max(0.0, work.fixed_s + beside), "work"
        if work.samples is not None and self._per_sample:
            return work.fixed_s + work.samples * statistics.median(self._per_sample), "work"
        variable = self._variable.get(shape[0])
        if variable:
            return work.fixed_s + statistics.median(variable), "work"
        return None, "pending"

    def _overhead(self) -> float:
        return (max(0.0, statistics.median(self._overheads)) if self._overheads
                else OVERHEAD_PER_RUN_S)

    def estimate(self) -> Estimate:
        total = 0.0
        units: Counter[str] = Counter()
        runs: Counter[str] = Counter()
        for shape, n in self.left.items():
            if n <= 0:
                continue
            cost, basis = self.unit_cost(shape)
            units[basis] += n
            if cost is not None:
                total += n * cost
            if basis == "own":
                runs[basis] += len(self.own[shape])
            elif basis == "stored":
                runs[basis] += self.history[shape][1]
        unknown = units["nothing"] or units["pending"]
        return Estimate(None if unknown else total, self._basis(units, runs),
                        dict(units))

    def _basis(self, units: Counter[str], runs: Counter[str]) -> str:
        if not units:
            return "nothing left"
        overhead = (f"overhead {self._overhead() * 1e3:.0f} ms per unit measured over "
                    f"{len(self._overheads)} run(s)" if self._overheads else
                    f"overhead {OVERHEAD_PER_RUN_S * 1e3:.0f} ms per unit assumed, none "
                    "measured yet")
        seen = sum(len(s) for s in self.own.values())
        texts = {
            "own": f"from {runs['own']} run(s) of this campaign of the same unit shape",
            "stored": f"from {runs['stored']} stored run(s) of the same unit shape",
            "model": f"model: timeout + {overhead}",
            "work": "model: " + self._work_text(overhead),
            "pending": "declared samples whose per-sample cost is measured once the first "
                       "run ends",
            "mean": f"this campaign's mean over {seen} run(s) of other shapes",
            "nothing": "nothing known yet",
        }
        return "; ".join(f"{n} unit(s) {texts[basis]}" for basis, n in units.items())


    def _work_text(self, overhead: str) -> str:
        declared = [(self._work(shape), n) for shape, n in self.left.items()
                    if n > 0 and shape in self.works]
        windows = sum(w.fixed_s * n for w, n in declared if w is not None)
        samples = sum((w.samples or 0) * n for w, n in declared if w is not None)
        parts = [f"{duration_text(windows)} of declared windows"] if windows else []
        if samples and self._per_sample:
            parts.append(f"{samples} sample(s) × {statistics.median(self._per_sample) * 1e3:.3g}"
                         f" ms per sample measured over {len(self._per_sample)} run(s)")
        elif any(w is not None and w.samples is None for w, _ in declared):
            runs = sum(len(v) for v in self._variable.values())
            parts.append(f"a pass over the data as measured over {runs} run(s)")
        if self._beside_windows:
            beside = statistics.median(self._beside_windows)
            overhead = (f"{'+' if beside >= 0 else '−'}{abs(beside) * 1e3:.0f} ms per unit "
                        f"beside the windows measured over {len(self._beside_windows)} run(s)")
        return " + ".join([*parts, overhead])


class LiveEstimate:
    """The estimator fed by a campaign this process runs: slots on this process's clock."""

    def __init__(self, units: Iterable[Any], done_keys: Iterable[str],
                 store_path: str | Path | Any, clock: Any = None) -> None:
        import time

        done = set(done_keys)
        self.estimator = Estimator.for_units(
            (u for u in units if str(u.key) not in done), store_history(store_path))
        self._store = store_path
        self._clock = clock or time.monotonic
        self._last: float | None = None

    def unit_done(self, unit: Any, status: str, run_uid: str | None = None) -> None:
        """``status`` "retried": the unit runs again, and its next slot holds both tries.
        ``run_uid``: the stored run, whose own start-to-stop measures a declared unit's
        per-sample cost when the slot holds the campaign's start-up (the first unit)."""
        if status == "retried":
            return
        t = self._clock()
        slot = None if self._last is None else t - self._last
        self._last = t
        run_s = None
        if slot is None or not self.estimator.capabilities:
            run_s = self._read_run(run_uid)
        self.estimator.done(unit_shape(unit), slot, run_s if slot is None else None)

    def _read_run(self, run_uid: str | None) -> float | None:
        """The stored run's own start-to-stop; its handshake teaches the estimator what its
        agents can do."""
        from hilbench.store import Store, StoreError

        if not run_uid:
            return None
        try:
            with Store(self._store) as store:
                run = store.run(run_uid)
        except (StoreError, KeyError):
            return None
        if isinstance(run.get("agents"), Mapping):
            self.estimator.learn(run["agents"])
        seconds = run.get("duration_s")
        return None if seconds is None else float(seconds)

    def estimate(self) -> Estimate:
        return self.estimator.estimate()


# The daemon's worker sends its plan to the daemon as [procedure, unit group, units left,
# expected slot s or None, stored runs]; with 0 stored runs the slot is the model's (budget +
# OVERHEAD_PER_RUN_S), which the daemon's estimator re-measures as the campaign runs.
PlanEntry = tuple[str, str, int, "float | None", int]


def plan_entries(units: Iterable[Any], history: Stored) -> list[PlanEntry]:
    """The worker's side: one entry per (procedure, unit group) still to run."""
    estimator = Estimator.for_units(units, history)
    merged: dict[tuple[str, str], list[Any]] = {}
    for shape, n in estimator.left.items():
        stored = history.get(shape)
        budget = estimator.budgets.get(shape)
        work = estimator.work(shape)
        if budget is None and work is not None and work.samples == 0:
            budget = work.fixed_s  # declared windows: a budget the daemon can re-measure
        cost, runs = ((stored[0], stored[1]) if stored is not None else
                      (budget + OVERHEAD_PER_RUN_S, 0) if budget is not None else (None, 0))
        entry = merged.setdefault(shape[:2], [shape[0], shape[1], 0, cost, runs])
        entry[2] += n
    return [tuple(e) for e in merged.values()]  # type: ignore[misc]


def estimator_from_plan(plan: Iterable[Sequence[Any]]) -> Estimator:
    """The daemon's side: the estimator the worker's plan describes."""
    left: Counter[Shape] = Counter()
    budgets: dict[Shape, float | None] = {}
    history: dict[Shape, tuple[float, int]] = {}
    for procedure, group, n, cost, runs in plan:
        shape = (str(procedure), str(group), "")
        left[shape] += int(n)
        budgets[shape] = None
        if cost is not None and runs > 0:
            history[shape] = (float(cost), int(runs))
        elif cost is not None:
            budgets[shape] = max(0.0, float(cost) - OVERHEAD_PER_RUN_S)
    return Estimator(left, budgets, history)
