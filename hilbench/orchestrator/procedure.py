"""The procedure plugin interface: how a workload joins a campaign without the core naming it.

A workload plugin (:mod:`hilbench.contracts.registry`, entry-point group
``hilbench.workloads``) names its procedures by the campaign table each owns, each value a
``"module:attribute"`` holding a :class:`Procedure`::

    WORKLOAD = WorkloadPlugin(name="kws", ..., procedures={"kws": "my_package.run:PROCEDURE"})

A procedure registered alone in the older ``hilbench.procedures`` group (entry-point name = its
table) is still found; a workload's own procedure wins over one of the same table there.

``PROCEDURE = Procedure(table=KwsTable, expand=expand_units, summary="...")`` where
``KwsTable`` subclasses :class:`CampaignTable` (a pydantic model: unknown keys are refused,
types are strict, ``agent`` is checked against the campaign's agents) and ``expand`` turns the
validated tables into :class:`Unit` objects, one per run. The table models also make up the
JSON Schema that ``hilbench campaign schema`` prints.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache
from importlib.metadata import EntryPoint
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator

from hilbench.contracts.registry import ENTRY_POINT_GROUP as WORKLOAD_GROUP
from hilbench.contracts.registry import workloads
from hilbench.entry_points import entry_points
from hilbench.orchestrator.interrupt import raise_if_interrupted

if TYPE_CHECKING:
    from hilbench.contracts.remote import RemoteDevice
    from hilbench.orchestrator.campaign import Campaign
    from hilbench.orchestrator.instruments import Instrument
    from hilbench.orchestrator.phases import RunContext

ENTRY_POINT_GROUP = "hilbench.procedures"  # the older group: a procedure alone


@dataclass(frozen=True)
class UnitKey:
    """A unit's identity as values: ``parts`` in order, each a bare word or a ``(name,
    value)`` field. ``str(key)`` (``kws/streaming/n=10/…``) is what the store keeps and
    a resumed campaign compares; code reads fields with :meth:`get`, never by splitting it."""

    parts: tuple[str | tuple[str, Any], ...]

    def get(self, name: str, default: Any = None) -> Any:
        for part in self.parts:
            if isinstance(part, tuple) and part[0] == name:
                return part[1]
        return default

    def __str__(self) -> str:
        return "/".join(
            part if isinstance(part, str) else f"{part[0]}={_key_value(part[1])}"
            for part in self.parts
        )


def _key_value(value: Any) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


class Unit(Protocol):
    """One run of a campaign, and everything it needs from the runner."""

    agent: str
    # Whether the run is measured by the instruments on its agent (False: e.g. a single
    # stream, accuracy and device times only; no instrument figure goes into the run).
    uses_instruments: bool

    @property
    def key(self) -> UnitKey:
        """Stable identity within the campaign: how a resumed campaign knows what is done."""

    @property
    def procedure(self) -> str:
        """``<workload>.<scenario>``, e.g. "kws.streaming"."""

    def params(self) -> dict[str, Any]:
        """The unit's parameters, recorded in RunStart."""

    def prepare(self) -> dict[str, Any]:
        """Work before the run starts (e.g. finding a target); extra params for RunStart."""

    def run(self, ctx: RunContext, device: RemoteDevice, instruments: Sequence[Instrument]
            ) -> None:
        """Emit the run's phases, events, samples and metrics through ``ctx``; ``device``
        offers the roles of the workloads' contracts."""


@dataclass(frozen=True)
class TableContext:
    """What a table is validated against: the campaign's agents and where relative paths start."""

    agent_ids: tuple[str, ...]
    base_dir: Path

    def path(self, value: str) -> Path:
        """``value`` as an absolute path, relative ones taken from the campaign file's folder."""
        path = Path(value).expanduser()
        return path if path.is_absolute() else (self.base_dir / path).resolve()


def table_context(info: ValidationInfo) -> TableContext | None:
    """The context a campaign load passes to validators (None when validating without one)."""
    ctx = info.context
    return ctx if isinstance(ctx, TableContext) else None


class CampaignTable(BaseModel):
    """Base of every procedure's campaign table: strict types, unknown keys refused, and an
    ``agent`` key that defaults to the campaign's first agent and must name one of them."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    agent: str = Field(
        default=None,  # type: ignore[assignment]  # replaced by the first agent's id
        validate_default=True,
        description="id of the [[agents]] entry that runs this table's units "
        "(default: the first agent)",
        json_schema_extra=lambda schema: schema.pop("default", None),
    )

    @field_validator("agent", mode="before")
    @classmethod
    def _known_agent(cls, value: Any, info: ValidationInfo) -> Any:
        ctx = table_context(info)
        if ctx is None:
            return value
        if value is None:
            return ctx.agent_ids[0] if ctx.agent_ids else value
        if isinstance(value, str) and value not in ctx.agent_ids:
            raise ValueError(f"{value!r} is not one of {list(ctx.agent_ids)}")
        return value


@dataclass(frozen=True)
class Procedure:
    """What a procedure plugin provides: its campaign table and how tables become units."""

    table: type[CampaignTable]
    expand: Callable[[Sequence[Any], Campaign], list[Unit]]
    summary: str = ""  # one line for `hilbench campaign schema` and error messages
    # Units one table makes per repetition, without making them (a campaign's size is checked
    # before anything starts, see hilbench.orchestrator.bounds); None: expand and count.
    count: Callable[[Any], int] | None = None
    # "module:function" recomputing a recorded run's metrics with the live analysis code
    # (``hilbench replay --analysis-only``, ``hilbench audit verify``); None: not offered.
    reanalysis: str | None = None


class ProcedureError(RuntimeError):
    """A registered procedure could not be loaded or is not a :class:`Procedure`."""


@cache
def procedure_names() -> dict[str, EntryPoint]:
    """Installed procedures by table name, not yet imported (a broken plugin only matters to
    campaigns that use its table)."""
    found: dict[str, EntryPoint] = {}
    for workload in workloads().values():
        for table, value in workload.procedures.items():
            found.setdefault(table, EntryPoint(name=table, value=value,
                                               group=WORKLOAD_GROUP))
    for ep in sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda e: e.name):
        found.setdefault(ep.name, ep)  # the same distribution may be seen twice on sys.path
    return dict(sorted(found.items()))


@cache
def load_procedure(name: str) -> Procedure:
    """The procedure owning table ``name``; ProcedureError says why it cannot be used."""
    ep = procedure_names()[name]
    try:
        plugin = ep.load()
    except Exception as exc:
        # A stop signal during the import: Python may wrap its Interrupted in another error
        # (a RuntimeError from a class's __set_name__, in CI); the signal wins, as it would
        # have anywhere else in start-up.
        raise_if_interrupted()
        raise ProcedureError(
            f"procedure {name!r} ({ep.value}) could not be loaded: {type(exc).__name__}: {exc}"
        ) from exc
    if not isinstance(plugin, Procedure) or not (
        isinstance(plugin.table, type) and issubclass(plugin.table, CampaignTable)
    ):
        raise ProcedureError(
            f"procedure {name!r} ({ep.value}) is not a hilbench Procedure with a "
            "CampaignTable model"
        )
    return plugin


def procedures() -> dict[str, Procedure]:
    """Every installed procedure by table name, loaded (for the schema of all tables)."""
    return {name: load_procedure(name) for name in procedure_names()}


def expand_all(campaign: Campaign) -> list[Unit]:
    """Every unit of the campaign, procedure by procedure in the order the file gives them."""
    units: list[Unit] = []
    for name, tables in campaign.tables.items():
        units.extend(load_procedure(name).expand(tables, campaign))
    return units
