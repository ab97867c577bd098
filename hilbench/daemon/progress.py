"""What the daemon knows of the campaign its worker runs: progress, agents, ETA.

Fed by the worker's reports (``hilbench.daemon.worker``); read by `hilbench status`. The ETA
is the sum, over the kinds of unit still to run (procedure and unit key with seed and
repetition pooled), of units left × mean duration of that kind: from this campaign's finished
runs once it has three of a kind, else from the store's successful runs of that kind, else from
this campaign's mean over all kinds. The status says which.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from hilbench.store.groups import replicate_key

if TYPE_CHECKING:
    from hilbench.daemon.messages import CampaignStarted, UnitEnded, UnitStarted

OWN_RUNS_TRUSTED = 3


@dataclass
class _Kind:
    left: int
    stored_mean_s: float | None
    stored_n: int
    seen_n: int = 0
    seen_sum_s: float = 0.0


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
    kinds: dict[tuple[str, str], _Kind] = field(default_factory=dict)

    def on_campaign(self, report: CampaignStarted) -> None:
        self.campaign_uid = report.uid
        self.total = report.total
        self.done = report.done
        self.kinds = {(p, g): _Kind(n, mean, stored) for p, g, n, mean, stored in report.plan}

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
        kind = self.kinds.get((report.procedure, replicate_key(report.key)))
        if kind is not None:
            kind.left = max(0, kind.left - 1)
            kind.seen_n += 1
            kind.seen_sum_s += report.duration_s

    def eta(self) -> tuple[float | None, str]:
        """Seconds left and what the figure is based on."""
        seen_n = sum(k.seen_n for k in self.kinds.values())
        seen_mean = sum(k.seen_sum_s for k in self.kinds.values()) / seen_n if seen_n else None
        total = 0.0
        by = {"this campaign": 0, "stored runs": 0, "this campaign's mean": 0, "nothing": 0}
        for kind in self.kinds.values():
            if not kind.left:
                continue
            if kind.seen_n >= OWN_RUNS_TRUSTED:
                total += kind.left * kind.seen_sum_s / kind.seen_n
                by["this campaign"] += kind.left
            elif kind.stored_mean_s is not None:
                total += kind.left * kind.stored_mean_s
                by["stored runs"] += kind.left
            elif seen_mean is not None:
                total += kind.left * seen_mean
                by["this campaign's mean"] += kind.left
            else:
                by["nothing"] += kind.left
        parts = [f"{n} unit(s) from {src}" for src, n in by.items() if n and src != "nothing"]
        if by["nothing"]:
            return None, (f"no duration known yet for {by['nothing']} unit(s)"
                          + (f"; {', '.join(parts)}" if parts else ""))
        basis = ("mean run duration of the same kind of unit (procedure and unit key, seeds and "
                 f"repetitions pooled): {', '.join(parts) or 'nothing left'}")
        return total, basis

    def to_dict(self) -> dict[str, Any]:
        eta_s, basis = self.eta()
        return {
            "item": self.item_id, "name": self.name, "campaign_uid": self.campaign_uid,
            "started_at": self.started_at, "unit": self.unit, "done": self.done,
            "total": self.total, "failed": self.failed, "unverified": self.unverified,
            "last_unit": self.last_unit,
            "eta_s": eta_s, "eta_basis": basis,
        }
