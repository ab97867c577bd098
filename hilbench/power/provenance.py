"""Where a power figure comes from, stored with it and shown with it everywhere.

Three kinds of source: an *instrument* the orchestrator reads itself (a DMM, RAPL or SoC Watch
read on this host), a *simulation* (the simulated bench meter: an instrument whose readings
come from a power model), and an *agent*'s own report (RAPL read by the agent, an on-board
monitor, Lava probes): a claim by a party the orchestrator does not run. An agent's report is
never the headline where an instrument measured the same window; where it is the only source
it is labelled as the agent's, with the uncertainty its source states, or "uncertainty not
stated" (then it stays out of leaderboard rows).

When two sources measured one window their agreement is the E_n number of ISO 13528
(:func:`agreement`): E_n = |x₁ − x₂| / √(U₁² + U₂²), flagged above 1.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from hilbench.power.uncertainty import UncertaintyBudget, UncertaintyComponent

Kind = Literal["instrument", "simulation", "agent"]
KINDS: tuple[str, ...] = ("instrument", "simulation", "agent")
META_KEY = "power_source"  # where a power metric's meta keeps its origin
NOT_STATED = "uncertainty not stated"
EN_LIMIT = 1.0


@dataclass(frozen=True)
class PowerOrigin:
    """One figure's source: its kind, its name (instrument id or the agent's source name), the
    agent that reported it (kind ``agent``), whether its uncertainty is stated, and a
    description (the instrument's name, the agent source's domains)."""

    kind: Kind
    name: str
    agent: str | None = None
    uncertainty_stated: bool = True
    description: str = ""

    @classmethod
    def of_agent(cls, agent: str, source: str | None, *, stated: bool,
                 description: str = "") -> PowerOrigin:
        return cls("agent", source or "unnamed", agent, stated, description)

    @property
    def is_agent(self) -> bool:
        return self.kind == "agent"

    @property
    def leaderboard_ok(self) -> bool:
        """May a leaderboard row carry it? Not an agent's report without a stated
        uncertainty."""
        return not (self.is_agent and not self.uncertainty_stated)

    def label(self) -> str:
        """How a table names the source: ``instrument dmm``, ``simulated meter dmm``, ``agent
        cpu0's own report (rapl)``."""
        if self.kind == "agent":
            return f"agent {self.agent}'s own report ({self.name})"
        if self.kind == "simulation":
            return f"simulated meter {self.name}"
        return f"instrument {self.name}"

    def mark(self) -> str:
        """What a figure from this source carries beside it, never without (empty for an
        instrument's: the table names its source elsewhere)."""
        return "agent report" if self.kind == "agent" else ""

    def explain(self) -> str:
        """The mark spelt out, for a note: ``agent cpu0's own report (rapl): uncertainty
        not stated``."""
        if self.kind != "agent":
            return self.label()
        return self.label() + ("" if self.uncertainty_stated else f": {NOT_STATED}")

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "name": self.name, "agent": self.agent,
                "uncertainty": "stated" if self.uncertainty_stated else "not stated",
                "description": self.description}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> PowerOrigin:
        kind = str(data.get("kind"))
        if kind not in KINDS:
            raise ValueError(f"power source kind {kind!r} is not one of {', '.join(KINDS)}")
        return cls(kind, str(data.get("name") or "unnamed"),  # type: ignore[arg-type]
                   None if data.get("agent") is None else str(data["agent"]),
                   data.get("uncertainty", "stated") != "not stated",
                   str(data.get("description") or ""))


def origin_of(meta: Mapping[str, Any] | None) -> PowerOrigin | None:
    """The origin a power metric's meta records (None: a store from before origins were
    kept, or no power figure)."""
    found = (meta or {}).get(META_KEY)
    if not isinstance(found, Mapping):
        return None
    try:
        return PowerOrigin.from_dict(found)
    except ValueError:
        return None


@dataclass(frozen=True)
class Agreement:
    """Two sources' figures for one window: E_n and whether it passes 1 (ISO 13528)."""

    en: float | None  # None: an uncertainty is missing or both are zero
    flagged: bool
    reason: str = ""

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"en": self.en, "flagged": self.flagged,
                               "rule": "E_n = |x1 - x2| / sqrt(U1^2 + U2^2), flagged above 1 "
                                       "(ISO 13528; U: 95 % expanded)"}
        if self.reason:
            out["reason"] = self.reason
        return out


def agreement(x1: float, u1: float | None, x2: float, u2: float | None) -> Agreement:
    """E_n of two figures with their 95 % expanded uncertainties. Without both uncertainties
    (or with both zero) there is no E_n, and the reason says so."""
    if u1 is None or u2 is None:
        return Agreement(None, False, f"no E_n: {NOT_STATED} for "
                         + ("either figure" if u1 is None and u2 is None
                            else "the first figure" if u1 is None else "the second figure"))
    if not all(math.isfinite(v) for v in (x1, x2, u1, u2)) or u1 < 0 or u2 < 0:
        raise ValueError(f"E_n needs finite figures and uncertainties ≥ 0: {x1} ± {u1}, "
                         f"{x2} ± {u2}")
    denominator = math.hypot(u1, u2)
    if denominator == 0:
        return Agreement(None, x1 != x2, "no E_n: both uncertainties are 0")
    en = abs(x1 - x2) / denominator
    return Agreement(en, en > EN_LIMIT)


def stated_uncertainty95(value: float, relative: float, absolute_w: float,
                         resolution_w: float = 0.0) -> float:
    """95 % expanded uncertainty of one reported figure from the bound its source states:
    ± (relative × |value| + absolute) and half a resolution step, each a rectangular bound
    (GUM-S1 Monte Carlo, as every other budget here)."""
    budget = UncertaintyBudget((
        UncertaintyComponent("stated gain", "rectangular", relative * abs(value)),
        UncertaintyComponent("stated offset", "rectangular", absolute_w),
        UncertaintyComponent("resolution", "rectangular", resolution_w / 2.0),
    ))
    return budget.expanded95


def origins_text(metas: Iterable[Mapping[str, Any] | None]) -> str:
    """The sources of a set of figures as one line (each named once, in a stable order):
    ``simulated meter dmm``; empty when none records its origin."""
    labels = sorted({origin.label() for meta in metas if (origin := origin_of(meta))})
    return "; ".join(labels)
