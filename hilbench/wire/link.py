"""What a link to an agent reports, below both the orchestrator's client and the contracts'
device handles (:mod:`hilbench.contracts.remote`): the agent's typed error, and the measured
offset between the agent's clock and the orchestrator's."""

from __future__ import annotations

import math
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


# Both ends read float seconds of a monotonic clock: a pong's own times may pass the
# orchestrator's window by this much (the rounding of two clocks' reads).
PONG_EDGE_S = 1e-6


def probe_round_trip(t1: float, t2: float, t3: float, t4: float) -> tuple[float, float]:
    """One clock probe, NTP-style: the round trip without the agent's stated hold (t3 − t2)
    and the offset. The hold is the agent's word and the orchestrator saw only t4 − t1: a hold
    below zero (a pong sent before its ping arrived) or longer than the whole round trip cannot
    be, and would move the offset's uncertainty, which every timing check allows, where the
    agent chose (a hold of −S widens it by S / 2). Raises ValueError naming the figures."""
    if not all(math.isfinite(t) for t in (t1, t2, t3, t4)):
        raise ValueError(f"the pong's times are not finite (t2 {t2!r}, t3 {t3!r})")
    observed, held = t4 - t1, t3 - t2
    if held < -PONG_EDGE_S:
        raise ValueError(f"the pong says it was sent {-held:.6f} s before its ping arrived "
                         f"(t3 {t3!r} < t2 {t2!r})")
    if held > observed + PONG_EDGE_S:
        raise ValueError(f"the pong says the agent held the ping {held:.6f} s, longer than the "
                         f"{observed:.6f} s the orchestrator waited for it")
    return observed - held, ((t2 - t1) + (t3 - t4)) / 2
