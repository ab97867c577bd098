"""Workloads are plugins: each one is a :class:`WorkloadPlugin` registered in the
``hilbench.workloads`` entry-point group, and the core reads this registry instead of naming
any workload.

A plugin states its wire contract here (request and reply Structs, the map it adds to the
handshake's capabilities, the checks those capabilities allow, which driver role method serves
which request) and names its upper-floor parts as ``"module:attribute"`` strings, imported only
where they are used (campaign tables, summary tables, report figures, conformance cases)::

    [project.entry-points."hilbench.workloads"]
    kws = "my_package.plugin:WORKLOAD"

The entry-point name is the workload's name (the ``workload`` key of its requests and its key
in the capabilities). The ``hilbench.procedures`` group of earlier releases is still read: a
procedure registered there alone keeps working (:mod:`hilbench.orchestrator.procedure`).
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cache
from typing import TYPE_CHECKING, Any

from hilbench.contracts.base import Reply
from hilbench.entry_points import entry_points

if TYPE_CHECKING:
    import numpy as np

ENTRY_POINT_GROUP = "hilbench.workloads"
CORE_DISTRIBUTION = "hilbench"

# (driver, request, payload arrays, stop event) -> (reply, reply arrays): how a request reaches
# the role method of a driver that implements the typed roles.
Role = Callable[[Any, Any, list["np.ndarray"], Any], tuple[Reply, list["np.ndarray"]]]


@dataclass(frozen=True)
class WorkloadPlugin:
    """One workload, as the core sees it."""

    name: str
    load: Any  # the Struct of its ``load`` body, or a tagged union of them
    run: Any  # the same for ``run``
    replies: Mapping[type, type[Reply]]  # request Struct -> its reply Struct
    # Its map in the handshake's capabilities (``Capabilities.<name>``); None: it has none.
    capabilities: type | None = None
    # (request, the driver's declared map for this workload) -> raises ContractError for what
    # the declaration rules out (a solver, mode or range the driver does not offer).
    check: Callable[[Any, Any], None] | None = None
    # request Struct -> how a typed driver serves it (see :data:`Role`).
    roles: Mapping[type, Role] = field(default_factory=dict)
    # "module:factory": requests the agent serves itself (factory(step) -> object with
    # ``serve(request, arrays, stop)`` returning a reply or None); see hilbench.agent.dispatch.
    agent_side: str | None = None
    # The declared map after decoding (e.g. a mode the agent adds on the driver's behalf).
    complete: Callable[[Any], None] | None = None
    # (declared map as sent, protocol version) -> what a peer of that version may be told.
    for_version: Callable[[dict[str, Any], int], dict[str, Any]] | None = None
    # Always send this workload's capabilities key, null when not served (peers of protocol
    # 1 … 4 saw it so); a plugin's key is left out when null, so a peer without it still talks.
    always_on_wire: bool = False
    # Protocol document sections: Structs of the handshake, then (title, Structs) of its own.
    spec_handshake: tuple[type, ...] = ()
    spec: tuple[tuple[str, tuple[type, ...]], ...] = ()
    # campaign table name -> "module:PROCEDURE" (a hilbench.orchestrator.procedure.Procedure).
    procedures: Mapping[str, str] = field(default_factory=dict)
    # Modules with ``tables(data: CampaignData) -> list[Table]`` (summary, report).
    summary_tables: tuple[str, ...] = ()
    # "module:function", function(sources, fig_dir) -> list[FigureSpec] (report, across
    # campaigns); hilbench.report.document draws them in this order.
    report_figures: tuple[str, ...] = ()
    # "module:function", function(source) -> run uids whose power trace the report draws.
    trace_runs: str | None = None
    # "module:function", function(data: CampaignData) -> list[str]: how its runs were timed and
    # measured, in sentences (the report's methodology section, in the registry's order).
    methodology: str | None = None
    # "module:attribute": the NeuroBench stage plans of its procedure family (workflow figure).
    stage_plans: str | None = None
    # "module:attribute": the campaigns and stored runs the core's daemon and store benchmarks
    # drive, when it is the first workload to offer them (hilbench.bench.bench_campaign).
    bench_fixture: str | None = None
    # "module:attribute": its NeuroBench leaderboard rows (hilbench.report.leaderboard).
    leaderboard: str | None = None
    # "module:function": its own section of the report's results, across campaigns
    # (hilbench.report.sections).
    report_section: str | None = None
    # "module:function": its driver conformance cases, function(suite, device, declared map,
    # **options) (hilbench.testing.driver_conformance runs them for a driver declaring it).
    conformance: str | None = None
    # Where it comes in the registry's order (the protocol document's, the capabilities'):
    # lower first, then by name.
    order: int = 100
    # Set by the registry: the distribution that registered it (the core's own, or a plugin).
    distribution: str = ""

    def reply_for(self, request_type: type) -> type[Reply] | None:
        return self.replies.get(request_type)


class WorkloadRegistryError(RuntimeError):
    """A registered workload could not be loaded or is not a :class:`WorkloadPlugin`."""


def _load(ep: Any) -> WorkloadPlugin:
    try:
        plugin = ep.load()
    except Exception as exc:
        raise WorkloadRegistryError(
            f"workload {ep.name!r} ({ep.value}) could not be loaded: "
            f"{type(exc).__name__}: {exc}") from exc
    if not isinstance(plugin, WorkloadPlugin) or plugin.name != ep.name:
        raise WorkloadRegistryError(
            f"workload {ep.name!r} ({ep.value}) is not a hilbench WorkloadPlugin named "
            f"{ep.name!r}")
    dist = getattr(getattr(ep, "dist", None), "name", "") or ""
    return WorkloadPlugin(**{**plugin.__dict__, "distribution": dist})


@cache
def workloads() -> dict[str, WorkloadPlugin]:
    """Every installed workload by name: the core's own first (in their registered order),
    then the others by name. A plugin that fails to load is reported on stderr and left out,
    so one broken package does not stop the benches that do not use it."""
    found: dict[str, WorkloadPlugin] = {}
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        if ep.name in found:
            continue  # the same distribution may be seen twice on sys.path
        try:
            found[ep.name] = _load(ep)
        except WorkloadRegistryError as exc:
            print(f"hilbench: {exc}", file=sys.stderr)
    return dict(sorted(found.items(), key=lambda item: (item[1].order, item[0])))


def core_workloads() -> dict[str, WorkloadPlugin]:
    """The workloads hilbench itself ships (what its protocol document describes)."""
    return {n: w for n, w in workloads().items() if w.distribution == CORE_DISTRIBUTION}


def for_request(request_type: type) -> WorkloadPlugin | None:
    """The workload whose contract names ``request_type``."""
    return _by_request().get(request_type)


@cache
def _by_request() -> dict[type, WorkloadPlugin]:
    return {request: w for w in workloads().values() for request in w.replies}


def resolve(target: str) -> Any:
    """``"module:attribute"`` imported (the registry's upper-floor parts)."""
    module, _, attribute = target.partition(":")
    found: Any = importlib.import_module(module)
    for part in attribute.split(".") if attribute else ():
        found = getattr(found, part)
    return found
