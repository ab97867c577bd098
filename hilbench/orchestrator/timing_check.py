"""The orchestrator's own check of the time an agent claims, against its request→reply window.

An agent reports what it timed on its own clock: a QUBO reply its region (``t_start``,
``t_end``) and length (``actual_s``), an ASC sample its stage times inside its region, a power
window its region. The orchestrator cannot see the device's timers, but it knows when it sent
the request and when the reply arrived (``sent``, ``received``, its clock), and before each
timed phase it measures what this link adds to such a request: echoes of the request's size
through the agent's worker path (:mod:`hilbench.wire.link_probe`), held to the echoes of a
reference responder the orchestrator runs itself, which the agent cannot slow
(:mod:`hilbench.orchestrator.reference_link`).

The rule, with ``outside = (received − sent) − claimed`` (claimed: ``actual_s``; an ASC
request's stage times added up; a power window's region)::

    allowed = link + u + untimed
      link     the link's measured bound before the phase (99th percentile of its echoes, plus
               their spread, plus the fastest: :mod:`.link_probe`;
               for a QUBO run, one request tried again when unverified, that bound only up
               to 5 × the claim and at least the 99th percentile read from the echoes' body plus
               the fastest:
               ``Allowance.link_s``), twice for a command that
               ran longer than LONG_COMMAND_S (a hilbench agent then sends its reply from
               another thread: one more turn of the kind an echo takes); a phase recorded before
               link probes (an old cassette or store, re-analysed): the rule then in force,
               LEGACY_LINK_S and ``untimed_s`` as reported, and every figure it allowed says so
      u        the clock offset's uncertainty (half the best ping round trip)
      untimed  work outside the timed region the driver declares in its capabilities as a
               maximum with its reason: a QUBO reply's ``untimed_s`` (at most ``qubo.untimed``),
               an ASC request's samples × ``asc.sample_untimed``; nothing undeclared

    on time        outside ≤ allowed
    unverified     outside > allowed, by no more than a loaded host explains (below): the run
                   is no answer at its timeout; it is tried again and counted, never averaged
                   and never a failure
    inconsistent   the run fails (``timing_inconsistent``) with the claim and the window side by
                   side, when the claim contradicts what the orchestrator saw whatever the
                   delays: the region does not lie inside [sent − u, received + u]; ``actual_s``
                   is not ``t_end − t_start`` (1 ms or 0.1 %); stage times longer than their
                   region (0.1 % + 50 µs: a device timer running fast); ``untimed_s`` past the
                   declared maximum; or a time outside beyond what load explains

Why two verdicts for a late reply: lateness alone proves nothing. A busy host delays an honest
reply as it delays the echoes (on the 2-core test machine under a busy loop per core the echoes'
median went from 0.15 ms to 4–8 ms, their slowest to 16–67 ms), and then more, since a process
that computed for the whole timed region is the first to be descheduled after it. A late reply
is therefore never an answer at its timeout (the bound alone decides that), but it is a lie by
name only when its excess passes what the host's load can explain: LOAD_FACTOR times the slowest
echo this link showed (before the phase, and in a fresh burst taken right after the late reply,
so a host that became busy meanwhile is seen), and never less than LOAD_FLOOR_S. Calling a
liar unverified costs nothing (no figure, ever); calling an honest agent on a busy host a liar
fails its run, so the margin is wide.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from hilbench.contracts.base import UntimedWork
from hilbench.wire.link import AgentError, ClockOffset
from hilbench.wire.link_probe import LONG_COMMAND_S, LinkBound

# The allowance for transport before it was measured on the link (hilbench ≤ issue 30): used
# only for phases recorded without link probes, and named in every figure it allows for.
LEGACY_LINK_S = 0.25
# Clock reads on either side are float seconds of a monotonic clock: a claim may touch the
# window's edge within this.
EDGE_S = 1e-6
# How much more than the slowest echo a loaded host may add to one reply, and the least.
LOAD_FACTOR = 10.0
LOAD_FLOOR_S = 1.0
# How many times its own claim a reply of a one-request run may spend outside it on the link's
# tail (beyond its typical bound). Measured with honest 1 ms QUBO runs on the 2-core test VM:
# under the soak's daemon load 0-3 % of replies spent more than 5 ms outside (p99 4-6 ms), at a
# load of 6 on 2 cores 13 % (p90 5.9 ms): those are tried again. A reply 10× late spends 9×.
SINGLE_CLAIM_FACTOR = 5.0
# A device's own timer may run a little fast against the host's (a board's crystal): its stage
# times may pass the region the host placed by this part and this much.
TIMER_RATE = 1e-3
TIMER_EDGE_S = 50e-6

Verdict = Literal["on_time", "unverified", "inconsistent"]
RULE = ("claimed region inside [sent − u, received + u]; actual_s = t_end − t_start; stages ≤ "
        "region; untimed_s ≤ declared maximum; window − claimed ≤ link bound + u + declared "
        "untimed (else unverified, or inconsistent past max(10 × slowest echo, 1 s) more)")


class TimingUnverified(AgentError):
    """A reply outside its measured bound by no more than a loaded host explains: no answer at
    its timeout, the run is tried again (``[campaign] timing_attempts``) and counted."""


@dataclass(frozen=True)
class Allowance:
    """What the orchestrator accepts outside a claim, part by part, with where each comes from."""

    link: LinkBound | None  # None: a phase recorded before link probes (LEGACY_LINK_S)
    offset_uncertainty_s: float
    untimed_s: float = 0.0
    untimed_note: str = ""  # what the untimed part is and who declared it
    turns: int = 1  # 2 for a command longer than LONG_COMMAND_S: its reply's extra turn
    single: bool = False  # a run of one request, tried again when unverified (a QUBO run)
    claimed_s: float = 0.0  # the work the request claims (a single run's bound, below)

    @property
    def link_s(self) -> float:
        """The link's part: its bound (:attr:`LinkBound.bound_s`). A run of one request may
        use that tail only up to ``SINGLE_CLAIM_FACTOR`` times its own claim: a reply out for
        longer than that, and longer than the link's typical bound
        (:attr:`LinkBound.single_bound_s`), is no evidence of a run of that length on one
        observation — it is unverified and tried again. Honest agents meet such a delay now
        and then on a busy host, an agent late by construction meets it every time (a reply
        10× late at a 1 ms timeout passed the tail bound of a busy host's echoes before this
        rule)."""
        if self.link is None:
            return LEGACY_LINK_S
        bound = self.link.bound_s
        if self.single:  # a bound recorded before its body was read: single = bound_s
            bound = max(self.link.single_bound_s,
                        min(bound, SINGLE_CLAIM_FACTOR * self.claimed_s))
        return self.turns * bound

    @property
    def total_s(self) -> float:
        return self.link_s + self.offset_uncertainty_s + self.untimed_s

    @property
    def slowest_echo_s(self) -> float:
        return self.link.max_s if self.link is not None else 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "allowed_s": self.total_s,
            "link_s": self.link_s,
            "link": (self.link.to_dict() if self.link is not None else
                     {"source": f"legacy constant {LEGACY_LINK_S} s: the phase was recorded "
                                "before link probes"}),
            "link_turns": self.turns,
            "link_rule": (f"one request: the link's bound up to {SINGLE_CLAIM_FACTOR:g} × the "
                          "claim, at least its fitted 99th percentile + fastest" if self.single
                          else "fitted 99th percentile + spread + fastest"),
            "offset_uncertainty_s": self.offset_uncertainty_s,
            "untimed_s": self.untimed_s,
            "untimed": self.untimed_note,
        }

    def describe(self) -> str:
        link = (f"link {self.link.describe()}" if self.link is not None
                else f"link {LEGACY_LINK_S} s (legacy constant: recorded before link probes)")
        if self.single and self.link is not None and self.link_s < self.turns * self.link.bound_s:
            link = (f"link {self.link_s / self.turns * 1e3:.3f} ms: one request may use the "
                    f"link's tail only up to {SINGLE_CLAIM_FACTOR:g} × its claim of "
                    f"{self.claimed_s:.6f} s, and at "
                    f"least {self.link.single_bound_s * 1e3:.3f} ms (the echoes' 99th percentile "
                    f"read from their median {self.link.median_s * 1e3:.3f} ms and 75th "
                    f"percentile {self.link.body_s * 1e3:.3f} ms, + fastest); of {link[5:]}")
        if self.turns > 1 and self.link is not None:
            link = (f"link × {self.turns} (a command longer than {LONG_COMMAND_S:g} s: its reply "
                    f"takes another turn between the agent's threads) of {link[5:]}")
        text = (f"{self.total_s:.6f} s allowed ({link}; clock offset ± "
                f"{self.offset_uncertainty_s:.6f} s")
        if self.untimed_s:
            text += f"; declared untimed {self.untimed_s:.6f} s: {self.untimed_note}"
        return text + ")"


def allowance(offset: ClockOffset, untimed_s: float = 0.0, untimed_note: str = "",
              claimed_s: float = 0.0, single: bool = False) -> Allowance:
    """The allowance of a request in a phase whose probes gave ``offset``; a command that
    lasted longer than LONG_COMMAND_S gets the link's bound twice (its reply's extra turn);
    ``single``: the run is this one request (:attr:`LinkBound.single_bound_s`)."""
    turns = 2 if claimed_s >= LONG_COMMAND_S else 1
    return Allowance(offset.link, offset.uncertainty_s, untimed_s, untimed_note, turns, single,
                     claimed_s)


@dataclass(frozen=True)
class TimingCheck:
    """A claim against the orchestrator's request→reply window (its clock) and its verdict."""

    sent: float  # orchestrator clock: the request left no earlier than this
    received: float  # and its reply arrived at this
    claimed_start: float  # the claimed region, mapped onto the orchestrator clock
    claimed_end: float
    claimed_s: float  # what the agent says it timed (actual_s, stages added up, a region)
    allowed: Allowance
    verdict: Verdict
    reason: str | None  # None: on time
    load_limit_s: float = 0.0  # the excess past which a late reply is inconsistent
    slowest_echo_s: float = 0.0  # the slowest echo the load limit was taken from
    samples: int = 1  # requests' samples the claim adds up (ASC)

    @property
    def window_s(self) -> float:
        """The orchestrator's bound: the timed region cannot have lasted longer than this."""
        return self.received - self.sent

    @property
    def outside_s(self) -> float:
        return self.window_s - self.claimed_s

    @property
    def margin_s(self) -> float:
        """How far inside its allowance the claim is (negative: outside it)."""
        return self.allowed.total_s - self.outside_s

    @property
    def consistent(self) -> bool:
        return self.verdict != "inconsistent"

    @property
    def on_time(self) -> bool:
        return self.verdict == "on_time"

    def to_dict(self) -> dict[str, Any]:
        return {
            "verdict": self.verdict,
            "consistent": self.consistent,
            "reason": self.reason,
            "orchestrator_window": [self.sent, self.received],
            "orchestrator_window_s": self.window_s,
            "claimed_region": [self.claimed_start, self.claimed_end],
            "claimed_s": self.claimed_s,
            "samples": self.samples,
            "outside_claim_s": self.outside_s,
            "allowance_s": self.allowed.total_s,
            "allowance": self.allowed.to_dict(),
            "margin_s": self.margin_s,
            "load_limit_s": self.load_limit_s,
            "slowest_echo_s": self.slowest_echo_s,
            "declared_untimed_s": self.allowed.untimed_s,
            "offset_uncertainty_s": self.allowed.offset_uncertainty_s,
            "rule": RULE,
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


def _lateness(window_s: float, claimed_s: float, allowed: Allowance,
              recheck: Callable[[], float] | None) -> tuple[Verdict, str | None, float, float]:
    """On time, unverified or inconsistent by the time outside the claim alone (module doc):
    the verdict, its reason, the load limit and the slowest echo it was taken from."""
    outside = window_s - claimed_s
    excess = outside - allowed.total_s
    slowest = allowed.slowest_echo_s
    limit = max(LOAD_FACTOR * slowest, LOAD_FLOOR_S)
    if excess <= 0:
        return "on_time", None, limit, slowest
    if excess > limit and recheck is not None:  # is the host busy now? ask the link again
        slowest = max(slowest, recheck())
        limit = max(LOAD_FACTOR * slowest, LOAD_FLOOR_S)
    said = (f"the reply arrived {window_s:.6f} s after the request was sent, the claim is "
            f"{claimed_s:.6f} s: {outside:.6f} s outside it, {excess:.6f} s more than the "
            f"{allowed.describe()}")
    if excess > limit:
        return ("inconsistent", f"{said}; more than a loaded host explains ({LOAD_FACTOR:g} × "
                f"the slowest echo {slowest:.6f} s, at least {LOAD_FLOOR_S:g} s)", limit, slowest)
    return ("unverified", f"{said}; within what a loaded host explains ({limit:.6f} s past "
            "the bound): not an answer at its timeout, tried again", limit, slowest)


def declared_untimed(untimed_s: float | None, declared: UntimedWork | None) -> str | None:
    """Why a reply's ``untimed_s`` is past what its driver declares; None when it is not."""
    untimed = float(untimed_s or 0.0)
    most = declared.max_s if declared is not None else 0.0
    if untimed <= most + EDGE_S:
        return None
    if declared is None:
        return (f"untimed_s = {untimed:.6f} s, but the driver declares no untimed work in its "
                "capabilities")
    return (f"untimed_s = {untimed:.6f} s is past the maximum the driver declares, "
            f"{declared.max_s:g} s ({declared.reason})")


def check_timed_region(
    t_start: float,
    t_end: float,
    claimed_s: float,
    untimed_s: float | None,
    sent: float,
    received: float,
    offset: ClockOffset,
    declared: UntimedWork | None = None,
    recheck: Callable[[], float] | None = None,
) -> TimingCheck:
    """Check a reply's ``t_start``/``t_end``/``actual_s`` (agent clock) and the per-run
    ``untimed_s`` it declares (at most ``declared``) against the orchestrator's window
    [``sent``, ``received``]; agent time t maps to t − offset (± offset.uncertainty_s).
    ``recheck`` gives the slowest of a fresh burst of echoes, asked only for a reply late
    beyond the load limit the phase's probe gave."""
    untimed = float(untimed_s or 0.0)
    start, end = t_start - offset.offset_s, t_end - offset.offset_s
    note = "per-run untimed_s reported by the agent, declared at most " + (
        f"{declared.max_s:g} s ({declared.reason})" if declared is not None else "0 s")
    allowed = allowance(offset, untimed, note if untimed else "", claimed_s + untimed,
                        single=True)
    reason = region_outside_window(t_start, t_end, sent, received, offset)
    if reason is None and abs((t_end - t_start) - claimed_s) > max(1e-3, 1e-3 * claimed_s):
        reason = (f"actual_s = {claimed_s:.6f} s, but the claimed region t_end − t_start lasts "
                  f"{t_end - t_start:.6f} s")
    if reason is None and offset.link is not None:  # recorded before declared maxima: as then
        reason = declared_untimed(untimed, declared)
    if reason is not None:
        return TimingCheck(sent, received, start, end, claimed_s, allowed, "inconsistent",
                           reason)
    verdict, reason, limit, slowest = _lateness(received - sent, claimed_s, allowed, recheck)
    return TimingCheck(sent, received, start, end, claimed_s, allowed, verdict, reason, limit,
                       slowest)


def check_region(agent: str, what: str, t_start: float, t_end: float, sent: float,
                 received: float, offset: ClockOffset, inside_s: float = 0.0) -> None:
    """Fail with ``timing_inconsistent`` unless [t_start, t_end] lies inside the
    orchestrator's window and holds ``inside_s`` of timed work (an ASC sample's stages, a power
    window's loop). The time outside the claimed work is :func:`check_work`'s."""
    reason = region_outside_window(t_start, t_end, sent, received, offset)
    if reason is None and inside_s > (t_end - t_start) * (1 + TIMER_RATE) + TIMER_EDGE_S:
        reason = (f"its timed work adds up to {inside_s:.6f} s, more than its claimed region "
                  f"of {t_end - t_start:.6f} s")
    if reason is not None:
        raise AgentError(agent, "timing_inconsistent",
                         f"{what}: {reason}; the orchestrator's request→reply window is "
                         f"{received - sent:.6f} s",
                         {"orchestrator_window": [sent, received], "t_start": t_start,
                          "t_end": t_end, "clock_offset": offset.to_dict()})


def check_work(
    sent: float,
    received: float,
    claimed_s: float,
    offset: ClockOffset,
    samples: int = 1,
    declared: UntimedWork | None = None,
    region: tuple[float, float] | None = None,
    recheck: Callable[[], float] | None = None,
    observed_per_sample_s: float = 0.0,
) -> TimingCheck:
    """The time an ASC request's window spends outside the work it claims (``claimed_s``: its
    samples' stages added up, or a power window's region) against the link's bound plus
    ``samples`` × the per-sample untimed work the driver declares and, for a sample list, what
    the orchestrator observed a sample's load and unload to cost (``observed_per_sample_s``)."""
    each = (declared.max_s if declared is not None else 0.0) + observed_per_sample_s
    untimed = samples * each
    parts = ([f"{declared.max_s:g} s declared ({declared.reason})"] if declared is not None
             else []) + ([f"{observed_per_sample_s:.6f} s observed for a sample's load and "
                          "unload as requests of their own"] if observed_per_sample_s else [])
    note = f"{samples} sample(s) × ({' + '.join(parts)})" if parts else ""
    start, end = region if region is not None else (sent, received)
    if offset.link is None:  # recorded before link probes: the rule then checked regions only
        allowed = allowance(offset, 0.0, "not checked: the phase was recorded before link "
                                         "probes, when only the claimed regions were checked")
        return TimingCheck(sent, received, start - offset.offset_s, end - offset.offset_s,
                           claimed_s, allowed, "on_time", None, samples=samples)
    allowed = allowance(offset, untimed, note, claimed_s)
    verdict, reason, limit, slowest = _lateness(received - sent, claimed_s, allowed, recheck)
    return TimingCheck(sent, received, start - offset.offset_s, end - offset.offset_s,
                       claimed_s, allowed, verdict, reason, limit, slowest, samples)


def raise_unless_on_time(agent: str, what: str, check: TimingCheck) -> None:
    """The run's end for a check that is not on time: ``timing_inconsistent`` (failed) or
    ``timing_unverified`` (tried again), with the claim and the window side by side."""
    if check.on_time:
        return
    text = (f"{what}: {check.reason}" if what else str(check.reason))
    if check.verdict == "unverified":
        raise TimingUnverified(agent, "timing_unverified", text, check.to_dict())
    raise AgentError(agent, "timing_inconsistent",
                     f"{text}; the agent claims {check.claimed_s:.6f} s, the orchestrator's "
                     f"request→reply window is {check.window_s:.6f} s", check.to_dict())

