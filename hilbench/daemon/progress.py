"""What the daemon knows of the campaign its worker runs: progress, agents, ETA.

Fed by the worker's reports (``hilbench.daemon.worker``); read by `hilbench status`. The ETA
is :mod:`hilbench.orchestrator.eta`'s, the one `hilbench run` prints: per kind of unit still
to run, this campaign's own slots (end of the unit before to its own end) once it has three,
else the store's runs of that kind, else the model (budget + overhead measured so far), else
this campaign's mean; the status says which, for how many units.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from hilbench.orchestrator.eta import Estimator, estimator_from_plan
from hilbench.store.groups import replicate_key

if TYPE_CHECKING:
    from hilbench.daemon.messages import CampaignStarted, UnitEnded, UnitStarted


@dataclass
class CampaignProgress:
    item_id: int
    name: str
    started_at: float = field(default_factory=time.time)
    campaign_uid: str | None = None
    total: int = 0
    done: int = 0  # success or fail, including units finished by earlier starts
    failed: int = 0
    unverified: int = 0  # runs whose timing could not be verified, each tried again
    done_this_start: int = 0
    unit: str | None = None
    last_unit: dict[str, Any] | None = None
    health: dict[str, Any] = field(default_factory=lambda: {"agents": [], "instruments": []})
    estimator: Estimator | None = None
    last_end: float | None = None  # when the last unit of this start ended (its report's t)

    def on_campaign(self, report: CampaignStarted) -> None:
        self.campaign_uid = report.uid
        self.total = report.total
        self.done = report.done
        self.estimator = estimator_from_plan(report.plan)
        self.last_end = None

    def on_unit_start(self, report: UnitStarted) -> None:
        self.unit = report.key

    def on_unit(self, report: UnitEnded) -> None:
        self.unit = None
        self.last_unit = {"key": report.key, "status": report.status, "run_uid": report.run_uid,
                          "duration_s": report.duration_s}
        if report.status == "abort":
            return
        if report.status == "unverified":  # tried again, unless no attempt was left
            self.unverified += 1
            if "no attempt left" not in report.reason:
                return
        self.done += 1
        self.done_this_start += 1
        if report.status == "fail":
            self.failed += 1
        slot = None if self.last_end is None else report.t - self.last_end
        self.last_end = report.t
        if self.estimator is not None:
            self.estimator.done((report.procedure, replicate_key(report.key), ""), slot)

    def eta(self) -> tuple[float | None, str]:
        """Seconds left and what the figure is based on."""
        if self.estimator is None:
            return None, "the campaign's plan is not known yet"
        estimate = self.estimator.estimate()
        return estimate.seconds, estimate.basis

    def to_dict(self) -> dict[str, Any]:
        eta_s, basis = self.eta()
        return {
            "item": self.item_id, "name": self.name, "campaign_uid": self.campaign_uid,
            "started_at": self.started_at, "unit": self.unit, "done": self.done,
            "total": self.total, "failed": self.failed, "unverified": self.unverified,
            "last_unit": self.last_unit,
            "eta_s": eta_s, "eta_basis": basis,
        }
