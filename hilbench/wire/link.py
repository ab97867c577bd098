"""What a link to an agent reports, below both the orchestrator's client and the contracts'
device handles (:mod:`hilbench.contracts.remote`): the agent's typed error, and the measured
offset between the agent's clock and the orchestrator's."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hilbench.wire.link_probe import LinkBound


class AgentError(RuntimeError):
    """The agent answered with a typed error."""

    def __init__(self, agent: str, code: str, message: str, detail: dict | None = None) -> None:
        super().__init__(f"agent {agent}: {code}: {message}")
        self.agent = agent
        self.code = code
        self.detail = detail or {}


@dataclass(frozen=True)
class ClockOffset:
    """Agent clock minus orchestrator clock, from the lowest-round-trip probe; with ``link``,
    what this link's own round trip cost when the phase began (see :class:`LinkBound`)."""

    offset_s: float
    uncertainty_s: float  # half the best round trip: the offset lies within ± this
    rtt_s: float
    probes: int
    link: LinkBound | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "offset_s": self.offset_s,
            "uncertainty_s": self.uncertainty_s,
            "rtt_s": self.rtt_s,
            "probes": self.probes,
        }
        if self.link is not None:
            out["link"] = self.link.to_dict()
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ClockOffset:
        """As a phase document stored it (phases recorded before link probes have no link)."""
        link = data.get("link")
        return cls(float(data["offset_s"]), float(data["uncertainty_s"]), float(data["rtt_s"]),
                   int(data.get("probes", 0)),
                   LinkBound.from_dict(link) if isinstance(link, dict) else None)
