"""ASC claims against the orchestrator's windows: the time a request's window spends outside the
stages (or the region) the device claims for it, held against the link's measured bound plus
the per-sample untimed work the driver declares (``asc.sample_untimed``), on every path: one
request per sample, sample lists, power windows, and their reanalysis from stored events.

A device that claims 0.1 + 0.1 ms per sample while each sample occupies 2 ms of its request's
window leaves 1.8 ms a sample unexplained: past the bound, the run is ``timing_unverified`` (or
``timing_inconsistent`` past what load explains). One request per sample, the median request is
held to the echoes' body (:meth:`PhaseTiming.check_typical`). On a sample list each sample may
also add the fastest load + unload pair the orchestrator timed (:func:`list_sample_allowance`):
about 0.5-1 ms on an idle 2-core host, 2.15 ms once on a loaded CI host, where the 1.8 ms liar
passed and one hiding 4.8 ms a sample did not. That pair is the agent's own load path: a device
that slows its loads widens what its lists may hide by as much.
See :mod:`hilbench.orchestrator.timing_check` for the rule.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from hilbench.contracts.base import UntimedWork
from hilbench.documents import Event
from hilbench.sdk import (
    TimingCheck,
    TimingUnverified,
    check_work,
    raise_unless_on_time,
)
from hilbench.wire.link import ClockOffset
from hilbench.wire.link_probe import Echo
from hilbench.workloads.asc.contract import AscCapabilities
from hilbench.workloads.asc.procedures.device import load_sample, unload_sample, uses_sample_lists

# What one sample's result adds to a reply (index, class, scores, stage times, region), and
# the reply of a power window (its loop and, from an on-board monitor, its readings).
RESULT_BYTES = 256
WINDOW_REPLY_BYTES = 4096
# Requests of one sample a phase needs before their median is held to the echoes' (check_typical).
TYPICAL_MIN_REQUESTS = 5
# Work long enough that echoes wait the longest idle step before them (link_probe's doc).
LONG_WORK_S = 1.0


def sample_untimed(caps: Any) -> UntimedWork | None:
    """The per-sample untimed work an ASC device declares (None: none)."""
    asc = caps.asc if caps is not None else None
    return asc.sample_untimed if isinstance(asc, AscCapabilities) else None


def samples_echo(indices: Sequence[int], sample_s: float = LONG_WORK_S) -> Echo:
    """A sample list run's shape: its body and one result per sample coming back, after the
    link sat idle as long as the list works (``sample_s`` a sample)."""
    return Echo(len(indices) * RESULT_BYTES, {"workload": "asc", "mode": "samples",
                                               "indices": [int(i) for i in indices]},
                work_s=len(indices) * sample_s)


def single_stream_echo(device: Any, count: int, per_list: int, sample_s: float) -> Echo:
    """The shape of the requests that run single stream on ``device``: sample lists of
    ``per_list`` samples where the agent offers them, else one run request per sample;
    ``sample_s``: how long the link sits idle while one sample works (the warm-up sample's
    claimed device time, at most its round trip)."""
    if uses_sample_lists(device):
        return samples_echo(range(min(count, per_list)), sample_s)
    return Echo(RESULT_BYTES, {"workload": "asc", "mode": "single_stream", "index": 0},
                work_s=sample_s)


def window_echo(body: dict[str, Any]) -> Echo:
    """A power window's shape: a loop of many samples, long past the last idle step."""
    return Echo(WINDOW_REPLY_BYTES, body, work_s=LONG_WORK_S)


@dataclass
class PhaseTiming:
    """The checks of one timed phase: each request's claim against its window; the phase keeps
    the one with the least margin for its ``timing_check`` event."""

    agent: str
    offset: ClockOffset
    declared: UntimedWork | None
    recheck: Callable[[], float] | None = None
    checked: int = 0
    worst: TimingCheck | None = None
    verdicts: dict[str, int] = field(default_factory=dict)
    last_received: float = 0.0  # the event's time: no clock read of its own (replays match)
    # a sample's load and unload as the orchestrator timed them (observe_load_unload): what
    # each sample of a sample list may add to the list's window besides the declared work
    list_sample_s: float = 0.0
    # one-sample requests: the time each spent outside its claim beyond its declared work
    single_outside: list[float] = field(default_factory=list)
    typical: dict[str, Any] = field(default_factory=dict)  # check_typical's figures

    def check(self, what: str, sent: float, received: float, claimed_s: float,
              samples: int = 1, region: tuple[float, float] | None = None) -> TimingCheck:
        """Check one request (raising ``timing_unverified`` or ``timing_inconsistent``)."""
        found = check_work(sent, received, claimed_s, self.offset, samples, self.declared,
                           region, self.recheck, self.list_sample_s)
        self.checked += 1
        if samples == 1:  # one sample's request: its unexplained time, for the typical check
            self.single_outside.append(found.outside_s - found.allowed.untimed_s)
        self.last_received = max(self.last_received, received)
        self.verdicts[found.verdict] = self.verdicts.get(found.verdict, 0) + 1
        if self.worst is None or found.margin_s < self.worst.margin_s:
            self.worst = found
        raise_unless_on_time(self.agent, what, found)
        return found

    def check_typical(self) -> None:
        """After a phase of one request per sample: the typical (median) request must spend
        no more outside its claim than the link's echoes do at their 99th percentile, read
        from their body (:attr:`LinkBound.tail_q99_s`: a few slow wake-ups do not lift it).

        Each request alone is held to the link's bound, which covers a rare slow wake-up and
        so lets a claim short by a constant part of it pass every time (a device claiming
        0.2 ms of a 2 ms sample: 1.8 ms outside, against a bound of 1.7-1.8 ms after 10 ms
        idle on the 2-core test VM). An honest agent's median request spends about what the
        echoes' median does (0.36 ms against 0.35 ms after 1 ms idle, measured there), well
        under their 99th percentile; a constant short claim lifts every request, the median
        with them. Unverified, not inconsistent: a host loaded for the whole phase lifts the
        median too."""
        link = self.offset.link
        if link is None or len(self.single_outside) < TYPICAL_MIN_REQUESTS:
            return
        typical = float(statistics.median(self.single_outside))
        limit = link.tail_q99_s + self.offset.uncertainty_s
        self.typical = {"median_outside_s": typical, "limit_s": limit,
                        "requests": len(self.single_outside),
                        "rule": "median time outside the claim ≤ the echoes' 99th percentile "
                                "(read from their body) + the clock offset's uncertainty"}
        if typical > limit:
            raise TimingUnverified(
                self.agent, "timing_unverified",
                f"the median of {len(self.single_outside)} requests spent {typical:.6f} s "
                f"outside its claim, more than the {limit:.6f} s its link's echoes took at "
                f"their {link.quantile * 100:g}th percentile (+ the clock offset's "
                f"uncertainty): every claim is short by about {typical - link.median_s:.6f} s",
                {"typical": self.typical})

    def summary(self) -> dict[str, Any]:
        """What the phase's ``timing_check`` event stores: the requests checked and the one
        closest to (or past) its allowance."""
        worst = self.worst.to_dict() if self.worst is not None else {}
        return {**worst, "requests_checked": self.checked, "verdicts": self.verdicts,
                "worst_request": "the request with the least margin",
                **({"typical": self.typical} if self.typical else {})}

    def emit(self, ctx: Any, phase_uid: str) -> None:
        """The phase's ``timing_check`` event (none for a phase without a link probe: a replay
        of a cassette recorded before them, whose documents must come out as recorded)."""
        if self.checked and self.offset.link is not None:
            ctx.emit(Event(ctx.run_uid, phase_uid, "timing_check", self.last_received,
                           self.summary()))


LOAD_PROBES = 4  # load + unload pairs the orchestrator times before a phase of sample lists


def list_sample_allowance(pairs_s: Sequence[float]) -> float:
    """What each sample of a sample list may add to the list's window: the fastest of the
    observed load + unload pairs. Each pair is two requests of their own, so even the fastest
    holds two round trips beside the load and unload a list does on the agent's side: an upper
    bound on them. A host's noise only lengthens pairs: the median of four rose past the 1.8 ms
    a sample the forged-stages liar hides on a loaded CI machine and let it pass (the slowest,
    before that, widened a 10-sample list's allowance tenfold). The live check and the
    reanalysis both take it from here."""
    return float(min(pairs_s)) if pairs_s else 0.0


def observe_load_unload(ctx: Any, phase: Any, device: Any, index: int, audio: Any) -> float:
    """Before a phase of sample lists: time ``LOAD_PROBES`` loads and unloads of one sample as
    requests of their own (no claim of the agent's in them, only the orchestrator's windows);
    in a list the agent loads and unloads each sample beside the device, where the
    orchestrator cannot see it, so a list's sample may add :func:`list_sample_allowance` of
    these pairs to the list's window. Stored as an event (``load_unload_probe``) for
    reanalysis; none without a link probe (the replay of a cassette recorded before them)."""
    if phase.offsets[device.name].link is None:
        return 0.0
    pairs = []
    for _ in range(LOAD_PROBES):
        load_sample(device, index, audio)
        loaded = device.window
        unload_sample(device, index)
        unloaded = device.window
        assert loaded is not None and unloaded is not None
        pairs.append((loaded[1] - loaded[0]) + (unloaded[1] - unloaded[0]))
    ctx.emit(Event(ctx.run_uid, phase.uid, "load_unload_probe", unloaded[1],
                   {"pairs_s": pairs, "index": int(index),
                    "rule": "the fastest load + unload pair, each a request of its own, may be "
                            "spent per sample of a sample list outside its stages"}))
    return list_sample_allowance(pairs)


Region = tuple[float, float]  # a sample's t_start, t_end on the device's clock


def request_groups(records: Sequence[Any], regions: Sequence[Region]
                   ) -> list[tuple[tuple[float, float], list[Any], list[Region]]]:
    """Consecutive samples run by one request (a sample list, or one run request each), with
    that request's window."""
    groups: list[tuple[tuple[float, float], list[Any], list[Region]]] = []
    for record, region in zip(records, regions, strict=True):
        window = tuple(record.window)
        if not groups or groups[-1][0] != window:
            groups.append((window, [], []))  # type: ignore[arg-type]
        groups[-1][1].append(record)
        groups[-1][2].append(region)
    return groups  # type: ignore[return-value]


def check_request(timing: PhaseTiming, window: tuple[float, float], records: Sequence[Any],
                  regions: Sequence[Region]) -> TimingCheck:
    """One request's samples (each with its region on the device's clock): their stages added
    up against its window."""
    stages = sum(float(r.device_s) for r in records)
    first, last = records[0], records[-1]
    what = (f"sample {first.index}" if len(records) == 1 else
            f"sample list of {len(records)} (samples {first.index} … {last.index})")
    region = (float(regions[0][0]), float(regions[-1][1]))
    return timing.check(what, window[0], window[1], stages, len(records), region)
