"""What one agent link costs, measured: echoes of a command's size through the agent's worker
path, before a timed phase, so that the time an agent may spend outside its claimed region is a
figure of this link, not a constant.

An echo is the protocol's ``noop``: a device command that goes the way ``run`` goes (header
codec and checks, session and busy rules, memory budget, the driver thread's turn at the socket)
without touching a device, and comes back with its body and payloads. It carries the real
request's body and a payload as large as the reply the real request will bring back, both ways,
so each echo costs at least what the link adds to the real exchange.

Cost per phase: a phase takes ``FRESH_ECHOES`` new echoes (half as many as the clock-offset
probe's pings; 8 took 1.4 ms median on the loaded 2-core test VM, 3-5 % of a 1 ms QUBO unit's
30-50 ms, 4 take 0.8 ms) and states its bound from the newest ``POOL_ECHOES`` of this link and
payload size, at least ``MIN_ECHOES`` (a first phase takes that many; a burst right after a
late reply adds more). The bound is the pool's 99th percentile, plus the pool's spread (99th
percentile − median) once more, plus its fastest echo. A run of one request (a QUBO run) has
a second, typical bound beside it (:attr:`LinkBound.single_bound_s`): the 99th percentile read
from the pool's body — an exponential tail through the median and the 75th percentile — plus
the fastest echo. A pool of 24-48 echoes cannot show its 99th percentile: that is its largest
echo or two, and one rare slow wake-up on a busy host (19.5 ms among echoes of median 0.2 ms,
measured under a busy loop per core) lifts the bound to 25 ms, wide enough for a reply 10×
late at a 1 ms timeout to pass; under a busy loop per core 10-15 % of echoes wait a scheduler
turn (6-9 ms against a median of 0.3 ms), so even the 90th percentile can sit in that slow mode,
the 75th does not. How the two are used is the timing check's
(:attr:`hilbench.orchestrator.timing_check.Allowance.link_s`):

* a run meets a delay from the same distribution as the echoes, and an exponential tail through
  the median and the 99th percentile reaches the quantile plus the spread at its 99.98th
  percentile (on a quiet link the spread is tens of µs);
* a real request does an echo's work and about as much again that the echo skips: its body
  decoded against its contract, the driver's own calls around its timed region, a fresh reply
  encoded, and after a command longer than the agent's follower check (0.25 s) a turn back to
  the thread that holds the socket. The fastest echo, the link's fixed cost without any
  delay, counts that once (on the 2-core test VM the cpu driver spent 0.06 ms median around its
  region in-process, the fastest echo took 0.1 ms).

Echoes wait as the real reply waits. A reply that comes after its device worked for a while
finds the orchestrator's receiving thread asleep, and waking it costs more than a round trip
taken back to back: on the 2-core test VM an honest agent's reply after 1 ms of work spent
0.36 ms outside its claim (median), after 30-100 ms 0.8 ms (99th percentile 2-3.2 ms), while
back-to-back echoes took 0.13 ms (99th percentile 0.2 ms). So each echo of a phase is sent
after the link sat idle for as long as the phase's request is expected to work (``idle_s``,
rounded up to one of ``IDLE_STEPS_S``; past the last one the wake-up costs no more: echoes
after 10, 30 and 100 ms idle had 99th percentiles of 3.4, 3.6 and 4.2 ms), and each idle step
keeps its own pool. A long step's fresh echoes are fewer (``FRESH_IDLE_ECHOES``): they cost
their idle time each.

The agent serves these echoes, so it could slow them and widen its own bound. Each phase's
bound is therefore held to the echoes of the orchestrator's own reference responder, taken
beside them with the same shape (:meth:`LinkBound.against`,
:mod:`hilbench.orchestrator.reference_link`).
"""

from __future__ import annotations

import dataclasses
import math
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

QUANTILE = 0.99
BODY_QUANTILE = 0.75  # the tail is fitted through the median and this quantile
# A hilbench agent hands a command that runs longer than this to its calling thread, which
# serves the socket meanwhile and sends the reply (hilbench.agent.turns.FOLLOWER_CHECK_S): such a
# reply takes one more turn between threads than an echo, of the same kind the echo takes.
LONG_COMMAND_S = 0.25
FRESH_ECHOES = 4
MIN_ECHOES = 24
POOL_ECHOES = 48
MIN_PAYLOAD_BYTES = 1024
# The idle times echoes are sent after (s): a phase's expected work rounds up to one of them.
IDLE_STEPS_S = (0.0, 1e-3, 2e-3, 5e-3, 10e-3, 20e-3)
FRESH_IDLE_ECHOES = 2  # fresh echoes a phase takes after idle steps of COLD_STEP_S and more
COLD_STEP_S = 5e-3
# An exponential tail through the median (p = 0.5) and the BODY_QUANTILE reaches the 99th at
# median + (q_body − median) × ln(0.5 / 0.01) / ln(0.5 / (1 − BODY_QUANTILE)).
_TAIL_99_OVER_BODY = math.log(0.5 / 0.01) / math.log(0.5 / (1.0 - BODY_QUANTILE))
# How many times the median echo of the orchestrator's own reference responder an agent's median
# echo may take before its echoes stop setting its bound (LinkBound.against). Measured on the
# 2-core test VM with `hilbench bench reference`: pools of 24 echoes of an honest agent process
# and of the reference's process, taken one after the other: the agent's median was 0.70-1.70 ×
# the reference's (medians 1.03, two runs of 60 pairs) on an idle host, 0.70-1.54 × (30 pairs,
# two runs) under a busy loop per core; its 75th percentile 0.64-2.05 × idle, 0.65-1.20 × busy.
# (With the reference a thread of the orchestrator, it was 0.36-2.55 ×, and an agent with a
# thread that holds the GIL took 23-52 ×.)
REFERENCE_FACTOR = 5.0


def idle_step(work_s: float) -> float:
    """The idle step echoes of a request expected to work ``work_s`` are sent after: the
    smallest step at least as long (the last one for anything longer); 0 below 0.1 ms."""
    if work_s < 1e-4:
        return 0.0
    return next((step for step in IDLE_STEPS_S if step >= work_s), IDLE_STEPS_S[-1])


def payload_bucket(nbytes: int) -> int:
    """The echo's payload for a reply of ``nbytes``: the next power of two (at least 1 KiB),
    so that the phases of a campaign share a few pools and never echo less than they carry."""
    return 1 << max(int(nbytes) - 1, MIN_PAYLOAD_BYTES - 1).bit_length()


@dataclass(frozen=True)
class Echo:
    """The shape of the request a phase times: its body (sent as the echo's body) and the
    bytes its reply will carry (sent as the echo's payload, rounded up to a pool size)."""

    reply_bytes: int
    body: dict[str, Any] | None = None
    work_s: float = 0.0  # how long the device is expected to work before it replies

    @property
    def payload_bytes(self) -> int:
        return payload_bucket(self.reply_bytes)

    @property
    def idle_s(self) -> float:
        """How long the link sits idle before each echo (module doc)."""
        return idle_step(self.work_s)


@dataclass(frozen=True)
class LinkBound:
    """Round trips of echoes on one link before a phase, and the bound taken from them."""

    payload_bytes: int
    echoes: int  # in the pool the bound is taken from
    fresh: int  # of them taken just before this phase
    median_s: float
    q99_s: float
    max_s: float
    min_s: float = 0.0
    quantile: float = QUANTILE
    idle_s: float = 0.0  # each echo was sent after the link sat idle this long
    # The pool's BODY_QUANTILE; None for a bound recorded before the body was read (then the
    # pool's own 99th percentile is the quantile, the rule then in force).
    body_s: float | None = None
    source: str = "agent"  # whose echoes: the agent's, or the orchestrator's "reference"
    # The orchestrator's reference responder's echoes of the same shape beside this pool, and
    # the network's share of a round trip the bench operator declared for the agent (None:
    # a phase recorded before the reference; against()).
    reference: LinkBound | None = None
    budget_s: float = 0.0
    # Set when the agent's own echoes were slower than the reference explains: those echoes,
    # kept for the record, while this bound's figures are the reference's plus a slack (against()).
    own: LinkBound | None = None

    def against(self, reference: LinkBound | None, budget_s: float = 0.0) -> LinkBound:
        """This agent's bound held to the reference's echoes: itself (carrying the reference)
        while its median echo and its body (BODY_QUANTILE) are each at most REFERENCE_FACTOR ×
        the reference's plus ``budget_s``; else the reference's figures, each plus the slack
        that limit gives the median ((REFERENCE_FACTOR − 1) × the reference's median +
        ``budget_s``), which the agent cannot slow, carrying its own echoes as :attr:`own`. An
        agent cannot widen its bound by slowing its echoes: past that limit it only loses its
        own figures. The body is compared too because the typical checks read it
        (:attr:`tail_q99_s`): slowing a quarter of the echoes lifts it and not the median.
        The tail is the reference's, not a multiple of it: the host's noise, as the reference
        met it."""
        if reference is None:
            return self
        if self._past(reference, budget_s) is None:
            return dataclasses.replace(self, reference=reference, budget_s=budget_s)
        slack = (REFERENCE_FACTOR - 1) * reference.median_s + budget_s

        def scaled(value: float) -> float:
            return value + slack

        return dataclasses.replace(
            reference, payload_bytes=self.payload_bytes, median_s=scaled(reference.median_s),
            q99_s=scaled(reference.q99_s), max_s=scaled(reference.max_s),
            min_s=scaled(reference.min_s),
            body_s=None if reference.body_s is None else scaled(reference.body_s),
            source="agent", reference=reference, budget_s=budget_s, own=self)

    @property
    def tail_q99_s(self) -> float:
        """The 99th percentile read from the pool's body: the exponential tail through the
        median and the 75th percentile at 0.99, no higher than the pool's own (module doc)."""
        if self.body_s is None:
            return self.q99_s
        fitted = self.median_s + (self.body_s - self.median_s) * _TAIL_99_OVER_BODY
        return min(self.q99_s, fitted)

    @property
    def spread_s(self) -> float:
        return self.q99_s - self.median_s

    @property
    def bound_s(self) -> float:
        """The link's share of a request's window the orchestrator accepts: the quantile, the
        spread once more, and the fastest echo (module doc)."""
        return self.q99_s + self.spread_s + self.min_s

    @property
    def single_bound_s(self) -> float:
        """The typical bound of a run of one request that is tried again when unverified
        (a QUBO run): the 99th percentile read from the pool's body and the fastest echo. A
        bound recorded before the body was read keeps :attr:`bound_s` (the rule then)."""
        if self.body_s is None:
            return self.bound_s
        return self.tail_q99_s + self.min_s

    @classmethod
    def of(cls, round_trips: list[float], payload_bytes: int, fresh: int,
           idle_s: float = 0.0) -> LinkBound:
        rtt = np.asarray(round_trips, dtype=np.float64)
        return cls(payload_bytes, int(rtt.size), fresh, float(np.median(rtt)),
                   float(np.quantile(rtt, QUANTILE)), float(rtt.max()), float(rtt.min()),
                   idle_s=idle_s, body_s=float(np.quantile(rtt, BODY_QUANTILE)))

    def to_dict(self) -> dict[str, Any]:
        data = {"bound_s": self.bound_s, "quantile": self.quantile,
                "quantile_s": self.q99_s, "median_s": self.median_s,
                "spread_s": self.spread_s, "min_s": self.min_s, "max_s": self.max_s,
                "echoes": self.echoes, "fresh": self.fresh, "payload_bytes": self.payload_bytes,
                "idle_s": self.idle_s, "path": "noop (worker thread)"}
        if self.body_s is not None:
            data.update(body_s=self.body_s, body_quantile=BODY_QUANTILE,
                        tail_q99_s=self.tail_q99_s, single_bound_s=self.single_bound_s,
                        tail="exponential through the median and the body quantile")
        if self.source != "agent":
            data["source"] = self.source
        if self.reference is not None:
            data.update(reference=self.reference.to_dict(), budget_s=self.budget_s,
                        reference_factor=REFERENCE_FACTOR)
        if self.own is not None:
            data.update(held_to_reference=self.held_reason(), own=self.own.to_dict())
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> LinkBound:
        body = data.get("body_s")  # None: recorded before the pool's body was read
        reference, own = data.get("reference"), data.get("own")
        return cls(int(data["payload_bytes"]), int(data["echoes"]), int(data.get("fresh", 0)),
                   float(data["median_s"]), float(data["quantile_s"]), float(data["max_s"]),
                   float(data.get("min_s", 0.0)), float(data.get("quantile", QUANTILE)),
                   float(data.get("idle_s", 0.0)), None if body is None else float(body),
                   str(data.get("source", "agent")),
                   None if reference is None else cls.from_dict(reference),
                   float(data.get("budget_s", 0.0)), None if own is None else cls.from_dict(own))

    def _past(self, reference: LinkBound, budget_s: float) -> tuple[str, float, float] | None:
        """The first of this pool's median and body past REFERENCE_FACTOR × the reference's
        same figure + ``budget_s``, as (its name, this pool's, the reference's); None when
        both are within (a pool recorded before bodies were read compares its median only)."""
        figures = [("median", self.median_s, reference.median_s)]
        if self.body_s is not None and reference.body_s is not None:
            figures.append((f"{BODY_QUANTILE * 100:g}th percentile", self.body_s,
                            reference.body_s))
        for name, own, ref in figures:
            if own > REFERENCE_FACTOR * ref + budget_s:
                return name, own, ref
        return None

    def held_reason(self) -> str:
        """Why this bound is the reference's (empty when it is the agent's own echoes')."""
        if self.own is None or self.reference is None:
            return ""
        name, own, ref = self.own._past(self.reference, self.budget_s) or (
            "median", self.own.median_s, self.reference.median_s)
        budget = f" + the declared budget {self.budget_s * 1e3:.3f} ms" if self.budget_s else ""
        return (f"the agent's echoes took {own * 1e3:.3f} ms ({name}), more than "
                f"{REFERENCE_FACTOR:g} × the {ref * 1e3:.3f} ms of the orchestrator's reference "
                f"responder{budget}: held to the reference's echoes + {REFERENCE_FACTOR - 1:g} "
                f"× its median{budget}, not the agent's")

    def describe(self) -> str:
        """One line: the bound and how it was measured."""
        if self.own is not None:
            return f"{self.bound_s * 1e3:.3f} ms: {self.held_reason()}"
        return (f"{self.bound_s * 1e3:.3f} ms = {self.quantile * 100:g}th percentile "
                f"{self.q99_s * 1e3:.3f} ms + spread {self.spread_s * 1e3:.3f} ms + fastest "
                f"{self.min_s * 1e3:.3f} ms of {self.echoes} echoes ({self.fresh} before this "
                f"phase) of {self.payload_bytes} bytes{self._after_idle()} through the agent's "
                f"worker path; median {self.median_s * 1e3:.3f} ms, slowest "
                f"{self.max_s * 1e3:.3f} ms")

    def _after_idle(self) -> str:
        return f" each after {self.idle_s * 1e3:g} ms idle" if self.idle_s else ""


def held_burst(own_s: float, reference_s: float | None, budget_s: float = 0.0) -> float:
    """The slowest of an agent's burst of echoes (the link's load right after a late reply,
    which sets how late a reply may be before it is inconsistent rather than unverified),
    held like its bound (:meth:`LinkBound.against`) to a burst of the orchestrator's reference
    responder taken beside it: at most REFERENCE_FACTOR × the reference's slowest +
    ``budget_s``. An agent that slowed its echoes to 1 s once widened that limit to 10 s, and
    a reply 5 s past its bound was only tried again. ``reference_s`` None: the replay of a
    cassette recorded before the reference's bursts, checked by the rule then in force."""
    if reference_s is None:
        return own_s
    return min(own_s, REFERENCE_FACTOR * reference_s + budget_s)


class EchoPool:
    """The newest echo round trips of one link, one pool per payload size and idle step."""

    def __init__(self) -> None:
        self._pools: dict[tuple[int, float], deque[float]] = {}

    def _pool(self, payload_bytes: int, idle_s: float) -> deque[float]:
        return self._pools.setdefault((payload_bytes, idle_s), deque(maxlen=POOL_ECHOES))

    def measure(self, shape: Echo, send: Callable[[Echo], float],
                fresh: int | None = None) -> LinkBound:
        """Take ``fresh`` echoes of ``shape`` (more while the pool is short of MIN_ECHOES), each
        after the link sat ``shape.idle_s`` idle (``send`` waits it); the bound."""
        idle_s = shape.idle_s
        if fresh is None:
            fresh = FRESH_IDLE_ECHOES if idle_s >= COLD_STEP_S else FRESH_ECHOES
        pool = self._pool(shape.payload_bytes, idle_s)
        taken = max(fresh, MIN_ECHOES - len(pool))
        for _ in range(taken):
            pool.append(send(shape))
        return LinkBound.of(list(pool), shape.payload_bytes, taken, idle_s)

    def burst(self, shape: Echo, send: Callable[[Echo], float],
              count: int = FRESH_ECHOES) -> float:
        """The slowest of ``count`` echoes of ``shape`` now (kept in the pool too): how loaded
        the link is right after a reply that came late."""
        pool = self._pool(shape.payload_bytes, shape.idle_s)
        slowest = 0.0
        for _ in range(count):
            rtt = send(shape)
            pool.append(rtt)
            slowest = max(slowest, rtt)
        return slowest
