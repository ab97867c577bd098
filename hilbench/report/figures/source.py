"""What every workload's report figures are drawn from (:class:`Source`, one campaign's runs)
and what they hand back to the report (:class:`FigureSpec`): the report asks each workload
plugin for its figures (``WorkloadPlugin.report_figures``) and names none itself."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from hilbench.report.campaign_data import CampaignData


@dataclass(frozen=True)
class Source:
    """One campaign to draw: ``label`` names it in legends when several are drawn; ``data``
    is its runs with their metrics, read once for every table and figure."""

    label: str
    data: CampaignData

    def runs(self, procedure: str) -> list[dict[str, Any]]:
        """The successful runs of ``procedure``."""
        return [r for r in self.data.runs
                if r["procedure"] == procedure and r["status"] == "success"]


def value(run: dict[str, Any], name: str) -> float | None:
    """A run's stored metric value (None: not stored, or stored without a value)."""
    metrics = run["metrics"]
    return metrics[name]["value"] if name in metrics else None


@dataclass(frozen=True)
class FigureSpec:
    """One figure a workload drew across campaigns: ``paths`` (PNG, SVG) or None when there
    was nothing to draw."""

    key: str
    title: str
    caption: str
    paths: tuple[Path, Path] | None
    simulated: bool


@dataclass(frozen=True)
class FigureRequest:
    """What a workload's figure function is given: the campaigns, where figures go, and the
    reference system a comparison is drawn against (``hilbench report --reference``)."""

    sources: list[Source]
    fig_dir: Path
    reference: str | None = None
