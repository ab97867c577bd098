"""How a campaign's ASC groups were measured: the lines the terminal summary prints for each
(:func:`hilbench.workloads.asc.report.table.describe`), for the report's methodology section
(the ASC plugin's ``methodology``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from hilbench.workloads.asc.report.table import asc_groups, describe

if TYPE_CHECKING:
    from hilbench.report.campaign_data import CampaignData


def asc_methodology(data: CampaignData) -> list[str]:
    """Each ASC group's description, named by its agent."""
    return [f"ASC on {group.agent}: {line}" for group in asc_groups(data)
            for line in describe(group)]
