"""The procedure SDK: what a workload's procedure imports to join a campaign, instead of the
orchestrator's modules (whose insides may change). A workload plugin's procedure needs:

- its campaign table and units: :class:`CampaignTable`, :class:`Procedure`, :class:`UnitKey`,
  :class:`TableContext` / :func:`table_context` (paths relative to the campaign file),
  :class:`UnitNeeds` (what a unit needs, checked before anything starts);
- one run: :class:`RunContext` (phases, ``emit``), :class:`Phase`, :class:`Instrument`,
  :class:`RemoteDevice` (typed requests over the agent link), :class:`Event`,
  :class:`Metric`, :class:`AgentError` (fails the run naming the agent), :class:`Echo` (the
  shape of a timed request, so the link's share is measured);
- the timing rules a timed region is held to (:func:`check_timed_region`,
  :func:`check_region`, :func:`check_work`, :func:`raise_unless_on_time`,
  :class:`TimingCheck`, :class:`TimingUnverified`), and a unit's expected work for the
  campaign's ETA (:class:`UnitWork`);
- power: :func:`instrument_power`, :func:`agent_power`, :class:`PowerFigure`;
- a driver in this process as a device (:class:`LocalLink`), the campaign a table belongs to
  (:class:`Campaign`).
"""

from __future__ import annotations

from hilbench.contracts.remote import RemoteDevice
from hilbench.documents import Event, Metric
from hilbench.orchestrator.bounds import UnitNeeds
from hilbench.orchestrator.campaign import Campaign
from hilbench.orchestrator.eta import UnitWork
from hilbench.orchestrator.instruments import Instrument
from hilbench.orchestrator.local import LocalLink
from hilbench.orchestrator.phases import Phase, RunContext
from hilbench.orchestrator.procedure import (
    CampaignTable,
    Procedure,
    TableContext,
    Unit,
    UnitKey,
    table_context,
)
from hilbench.orchestrator.timing_check import (
    TimingCheck,
    TimingUnverified,
    check_region,
    check_timed_region,
    check_work,
    raise_unless_on_time,
)
from hilbench.sdk.power import PowerFigure, agent_power, instrument_power
from hilbench.wire.link import AgentError
from hilbench.wire.link_probe import Echo

__all__ = [
    "AgentError",
    "Campaign",
    "CampaignTable",
    "Echo",
    "Event",
    "Instrument",
    "LocalLink",
    "Metric",
    "Phase",
    "PowerFigure",
    "Procedure",
    "RemoteDevice",
    "RunContext",
    "TableContext",
    "TimingCheck",
    "TimingUnverified",
    "Unit",
    "UnitKey",
    "UnitNeeds",
    "UnitWork",
    "agent_power",
    "check_region",
    "check_timed_region",
    "check_work",
    "instrument_power",
    "raise_unless_on_time",
    "table_context",
]
