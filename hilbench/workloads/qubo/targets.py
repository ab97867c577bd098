"""Target cost of a QUBO workload, with where it came from.

Priority follows the NeuroBench rules: the exact optimum for n < 50 (computed, so it needs no
trust in any table), then the published table for tabulated rows (official even where a Tabu
value was later beaten), otherwise D-Wave Tabu with the published parameters, seeded, recorded
and cached.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np

from hilbench.workloads.qubo.cost import SparseQubo
from hilbench.workloads.qubo.generator import (
    DIAGONAL_WEIGHT,
    EDGE_WEIGHT,
    edge_count,
    qubo_graph,
    validate_workload,
    workload_edges,
)
from hilbench.workloads.qubo.published import (
    LATER_OPTIMA,
    TABLE_ORIGIN,
    TABLE_RESOURCE,
    published_target,
)
from hilbench.workloads.qubo.tabu import TabuSettings, installed_version, run_tabu
from hilbench.workloads.qubo.target_cache import TargetCache

EXACT_BELOW_NODES = 50

TargetSource = Literal["exact", "published", "tabu"]


@dataclass(frozen=True)
class Target:
    """A target cost (negative: minus an independent-set size) and its provenance."""

    cost: int
    source: TargetSource
    detail: dict[str, Any] = field(default_factory=dict)

    def describe(self) -> str:
        """One line saying where the value came from, for people reading CLI output or logs."""
        d = self.detail
        if self.source == "exact":
            return f"exact optimum: a maximum independent set has {d['set_size']} nodes"
        if self.source == "published":
            note = f"; {d['note']}" if "note" in d else ""
            return f"published NeuroBench target ({d['origin']}){note}"
        cached = ", from cache" if d.get("cached") else ""
        budget = ""
        if d.get("time_budget_s") is not None:
            budget = (
                f", time budget {d['time_budget_s']:g} s: {d.get('reads_done')} read(s) ran"
                + (" (cut short: not the published definition)" if d.get("budget_exhausted")
                   else "")
            )
        return (
            f"best of D-Wave Tabu: {d['num_reads']} reads, {d['num_restarts']} restarts, "
            f"timeout_ms={d['timeout_ms']}, seed {d['sampler_seed']}{budget}{cached}"
        )


def _networkx_version() -> str:
    return installed_version("networkx")


def _exact(nodes: int, density: float, seed: int) -> Target:
    """The exact target, computed once per workload in a process: a campaign's units of one
    workload (repetitions, solvers, timeouts) sit next to each other and share it. Each caller
    gets its own copy of the detail."""
    cost, independent_set = _exact_set(nodes, density, seed)
    return Target(
        cost=cost,
        source="exact",
        detail={
            "method": "per connected component, maximum clique of its complement, "
                      "networkx.max_weight_clique",
            "set_size": len(independent_set),
            "independent_set": list(independent_set),
            "networkx": _networkx_version(),
        },
    )


@functools.lru_cache(maxsize=64)
def _exact_set(nodes: int, density: float, seed: int) -> tuple[int, tuple[int, ...]]:
    from hilbench.workloads.qubo.exact import maximum_independent_set  # networkx: 0.1 s

    independent_set = maximum_independent_set(qubo_graph(nodes, density, seed))
    return -len(independent_set), tuple(independent_set)


def _tabu_key(nodes: int, density: float, seed: int, settings: TabuSettings, tabu_seed: int) -> str:
    return (
        f"n={nodes};edges={edge_count(nodes, density)};seed={seed};"
        f"reads={settings.num_reads};restarts={settings.num_restarts};"
        f"timeout_ms={settings.timeout_ms};budget_s={settings.time_budget_s};"
        f"sampler_seed={tabu_seed};"
        f"networkx={_networkx_version()};dwave-samplers={installed_version('dwave-samplers')}"
    )


def _cached_tabu(key: str, cache: TargetCache | None) -> Target | None:
    if cache is not None and (entry := cache.get(key)) is not None:
        return Target(entry["cost"], "tabu", {**entry["detail"], "cached": True})
    return None


def _tabu(
    nodes: int,
    density: float,
    seed: int,
    settings: TabuSettings,
    tabu_seed: int,
    cache: TargetCache | None,
) -> Target:
    key = _tabu_key(nodes, density, seed, settings, tabu_seed)
    if (cached := _cached_tabu(key, cache)) is not None:
        return cached
    u, v = workload_edges(nodes, density, seed)  # the same edges, without a networkx Graph
    sparse = SparseQubo(
        diag=np.full(nodes, DIAGONAL_WEIGHT, dtype=np.int64),
        u=u,
        v=v,
        weight=np.full(len(u), 2 * EDGE_WEIGHT, dtype=np.int64),
    )
    result = run_tabu(sparse, settings, tabu_seed)
    detail = {**result.detail(settings, tabu_seed), "networkx": _networkx_version()}
    if cache is not None:
        cache.put(key, {"cost": result.cost, "detail": detail})
        detail = {**detail, "cache_file": str(cache.path)}
    return Target(result.cost, "tabu", {**detail, "cached": False})


def _published(nodes: int, density: float, seed: int) -> Target | None:
    row = published_target(nodes, density, seed)
    if row is None:
        return None
    detail: dict[str, Any] = {
        "table": f"hilbench.workloads.qubo/{TABLE_RESOURCE}",
        "origin": TABLE_ORIGIN,
        "row": {"nodes": row.nodes, "density": row.density, "seed": row.seed},
    }
    later = LATER_OPTIMA.get((row.nodes, row.density, row.seed))
    if later is not None:
        detail["later_optimum"] = later
        detail["note"] = f"an exact solver later found {later}; the published value is official"
    return Target(cost=row.cost, source="published", detail=detail)


def default_tabu_seed(seed: int) -> int:
    """The Tabu sampler's seed for workload ``seed`` when none is given (32-bit)."""
    return seed % 2**32


def known_target(nodes: int, density: float, seed: int, *, cache_path: Path | None = None
                 ) -> Target | None:
    """The official target when it costs nothing to have: the published table, or a Tabu
    value computed earlier (the cache). None when only a Tabu run (or, below 50 nodes, the
    exact solver) would give it."""
    validate_workload(nodes, density, seed)
    nodes, density, seed = int(nodes), float(density), int(seed)
    if nodes < EXACT_BELOW_NODES:
        return None
    published = _published(nodes, density, seed)
    if published is not None:
        return published
    key = _tabu_key(nodes, density, seed, TabuSettings(), default_tabu_seed(seed))
    return _cached_tabu(key, TargetCache(cache_path))


def find_target(
    nodes: int,
    density: float,
    seed: int,
    *,
    cache: bool = True,
    cache_path: Path | None = None,
    tabu_settings: TabuSettings | None = None,
    tabu_seed: int | None = None,
) -> Target:
    """Target cost of workload (nodes, density, seed) and where it came from.

    ``tabu_settings`` other than the default (100 reads, 50 restarts, no timeout) and
    ``tabu_seed`` (default: the workload seed, modulo 2**32) exist for experiments and quick
    tests; they are recorded in ``detail``, so a non-official target is never mistaken for an
    official one.
    """
    validate_workload(nodes, density, seed)
    nodes, density, seed = int(nodes), float(density), int(seed)
    if nodes < EXACT_BELOW_NODES:
        return _exact(nodes, density, seed)
    published = _published(nodes, density, seed)
    if published is not None:
        return published
    return _tabu(
        nodes,
        density,
        seed,
        tabu_settings or TabuSettings(),
        default_tabu_seed(seed) if tabu_seed is None else tabu_seed,
        TargetCache(cache_path) if cache else None,
    )
