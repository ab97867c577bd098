"""The orchestrator's own check of a timed region an agent claims.

An agent reports its timed region on its own clock (``t_start``, ``t_end``) and its length
(``actual_s``). The orchestrator cannot see the device's timers, but it knows when it sent the
request and when the reply arrived, on its own clock. Mapped with the phase's measured clock
offset (± its uncertainty), an honest claim lies inside that window, its length agrees with its
ends, and the time outside it (transport, dispatch, and any per-run set-up or teardown the agent
declares as ``untimed_s``) is small. A claim that fails any of these is ``timing_inconsistent``:
the run is failed with both figures and none of its figures is used. An agent that replied ten
times late but reported the requested time is caught by the last rule.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hilbench.orchestrator.client import AgentError, ClockOffset

# What an honest agent may spend on a request outside its timed region without declaring it:
# decoding the request, handing it to the device thread, encoding and sending the reply, and
# being descheduled meanwhile on a loaded host. Per-run set-up or teardown that the rules allow
# outside the timed region (a Lava process per run) is declared in the reply as ``untimed_s``.
TRANSPORT_ALLOWANCE_S = 0.25
# Clock reads on either side are float seconds of a monotonic clock: a claim may touch the
# window's edge within this.
EDGE_S = 1e-6


@dataclass(frozen=True)
class TimingCheck:
    """A claimed timed region against the orchestrator's request→reply window (its clock)."""

    sent: float  # orchestrator clock: the request left no earlier than this
    received: float  # and its reply arrived at this
    claimed_start: float  # the claim's t_start, mapped onto the orchestrator clock
    claimed_end: float
    claimed_s: float  # the agent's actual_s
    offset_uncertainty_s: float  # ± of the mapping (half the best probe round trip)
    declared_untimed_s: float  # per-run set-up / teardown the agent says it did outside
    allowance_s: float  # time outside the claim the orchestrator accepts
    reason: str | None  # None: consistent

    @property
    def window_s(self) -> float:
        """The orchestrator's bound: the timed region cannot have lasted longer than this."""
        return self.received - self.sent

    @property
    def consistent(self) -> bool:
        return self.reason is None

    def to_dict(self) -> dict[str, Any]:
        return {
            "consistent": self.consistent,
            "reason": self.reason,
            "orchestrator_window": [self.sent, self.received],
            "orchestrator_window_s": self.window_s,
            "claimed_region": [self.claimed_start, self.claimed_end],
            "claimed_s": self.claimed_s,
            "outside_claim_s": self.window_s - self.claimed_s,
            "allowance_s": self.allowance_s,
            "declared_untimed_s": self.declared_untimed_s,
            "offset_uncertainty_s": self.offset_uncertainty_s,
            "rule": "claimed region inside [sent − u, received + u]; actual_s = t_end − t_start; "
                    "window − actual_s ≤ transport allowance + 2u + declared untimed_s",
        }


def region_outside_window(
    t_start: float, t_end: float, sent: float, received: float, offset: ClockOffset
) -> str | None:
    """Why the claimed region [t_start, t_end] (agent clock) cannot lie inside the
    orchestrator's window [sent, received]; None when it can."""
    u = offset.uncertainty_s
    start, end = t_start - offset.offset_s, t_end - offset.offset_s
    if end < start:
        return f"the claimed timed region ends {start - end:.6f} s before it starts"
    if start < sent - u - EDGE_S:
        return (f"the claimed timed region starts {sent - start:.6f} s before the request was "
                f"sent (clock offset ± {u:.6f} s)")
    if end > received + u + EDGE_S:
        return (f"the claimed timed region ends {end - received:.6f} s after the reply arrived "
                f"(clock offset ± {u:.6f} s)")
    return None


def check_timed_region(
    t_start: float,
    t_end: float,
    claimed_s: float,
    untimed_s: float | None,
    sent: float,
    received: float,
    offset: ClockOffset,
) -> TimingCheck:
    """Check a reply's ``t_start``/``t_end``/``actual_s`` (agent clock; ``untimed_s`` the
    per-run set-up it declares) against the orchestrator's window [``sent``, ``received``];
    agent time t maps to t − offset (± offset.uncertainty_s)."""
    untimed = float(untimed_s or 0.0)
    u = offset.uncertainty_s
    start, end = t_start - offset.offset_s, t_end - offset.offset_s
    allowance = TRANSPORT_ALLOWANCE_S + 2 * u + untimed
    window = received - sent
    reason = region_outside_window(t_start, t_end, sent, received, offset)
    if reason is None and abs((t_end - t_start) - claimed_s) > max(1e-3, 1e-3 * claimed_s):
        reason = (f"actual_s = {claimed_s:.6f} s, but the claimed region t_end − t_start lasts "
                  f"{t_end - t_start:.6f} s")
    if reason is None and window - claimed_s > allowance:
        reason = (f"the reply arrived {window:.6f} s after the request was sent, but the agent "
                  f"claims a timed region of {claimed_s:.6f} s: {window - claimed_s:.6f} s outside "
                  f"it ({start - sent:.6f} s before, {received - end:.6f} s after), more than the "
                  f"{allowance:.6f} s allowed (transport {TRANSPORT_ALLOWANCE_S} s + clock "
                  f"offset 2 × {u:.6f} s + declared untimed_s {untimed:g} s)")
    return TimingCheck(sent, received, start, end, claimed_s, u, untimed, allowance, reason)


def check_region(agent: str, what: str, t_start: float, t_end: float, sent: float,
                 received: float, offset: ClockOffset, inside_s: float = 0.0) -> None:
    """Fail with ``timing_inconsistent`` unless [t_start, t_end] lies inside the
    orchestrator's window and holds ``inside_s`` of timed work (an ASC sample's stages, a power
    window's loop). Where a device may spend untimed time around its region (serial transfer,
    audio playback), only these bounds are checked."""
    reason = region_outside_window(t_start, t_end, sent, received, offset)
    # A device's own timer may run a little fast against the host's (a board's crystal): its
    # stage times may pass the region the host placed by 0.1 % + 50 µs.
    if reason is None and inside_s > (t_end - t_start) * 1.001 + 50e-6:
        reason = (f"its timed work adds up to {inside_s:.6f} s, more than its claimed region "
                  f"of {t_end - t_start:.6f} s")
    if reason is not None:
        raise AgentError(agent, "timing_inconsistent",
                         f"{what}: {reason}; the orchestrator's request→reply window is "
                         f"{received - sent:.6f} s",
                         {"orchestrator_window": [sent, received], "t_start": t_start,
                          "t_end": t_end, "clock_offset": offset.to_dict()})


def inconsistent_error(agent: str, check: TimingCheck) -> AgentError:
    """The run's failure: ``timing_inconsistent`` with the agent's claim and the orchestrator's
    bound side by side."""
    return AgentError(
        agent,
        "timing_inconsistent",
        f"{check.reason}; the agent claims {check.claimed_s:.6f} s, the orchestrator's "
        f"request→reply window is {check.window_s:.6f} s",
        check.to_dict(),
    )
