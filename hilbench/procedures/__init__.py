"""Benchmark procedures. Each turns its campaign tables into units; a unit is one run.

A procedure module provides ``expand_units(campaign) -> list[Unit]``; the runner asks every
module in :data:`PROCEDURE_MODULES` and runs the units in order.
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from hilbench.orchestrator.campaign import Campaign
    from hilbench.orchestrator.client import AgentClient
    from hilbench.orchestrator.instruments import Instrument
    from hilbench.orchestrator.phases import RunContext

PROCEDURE_MODULES = ("hilbench.procedures.qubo", "hilbench.procedures.asc")


class Unit(Protocol):
    """One run of a campaign."""

    agent: str

    @property
    def key(self) -> str:
        """Stable identity within the campaign: how a resumed campaign knows what is done."""

    @property
    def procedure(self) -> str:
        """e.g. "qubo.fixed_timeout", "asc.single_stream"."""

    def params(self) -> dict[str, Any]:
        """The unit's parameters, recorded in RunStart."""

    def prepare(self) -> dict[str, Any]:
        """Work before the run starts (e.g. the QUBO target); extra params for RunStart."""

    def run(self, ctx: RunContext, client: AgentClient, instruments: Sequence[Instrument]) -> None:
        """Emit the run's phases, events, samples and metrics through ``ctx``."""


def expand_all(campaign: Campaign) -> list[Unit]:
    units: list[Unit] = []
    for name in PROCEDURE_MODULES:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name == name:
                continue  # procedure not part of this installation
            raise
        units.extend(module.expand_units(campaign))
    return units
