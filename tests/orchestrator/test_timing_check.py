"""The timing rule (hilbench/orchestrator/timing_check.py) on exact figures: the time outside a
claim against the link's measured bound, the clock offset's uncertainty and the untimed work a
driver declares; late replies unverified or inconsistent; regions and stages; the legacy rule of
phases recorded before link probes. Each check here would pass a planted bug otherwise: the
allowance compared at 2×, ``untimed_s`` counted twice, a region allowed 10 % more work."""

from __future__ import annotations

import math

import pytest

from hilbench.contracts.base import UntimedWork
from hilbench.orchestrator.timing_check import (
    LEGACY_LINK_S,
    LOAD_FACTOR,
    LOAD_FLOOR_S,
    TimingUnverified,
    check_region,
    check_timed_region,
    check_work,
    raise_unless_on_time,
)
from hilbench.wire.link import AgentError, ClockOffset
from hilbench.wire.link_probe import (
    FRESH_ECHOES,
    FRESH_IDLE_ECHOES,
    IDLE_STEPS_S,
    MIN_ECHOES,
    POOL_ECHOES,
    Echo,
    EchoPool,
    LinkBound,
    idle_step,
    payload_bucket,
)

MS = 1e-3
# A link whose echoes took 0.1 ms (the fastest), 0.2 ms (median) to 0.4 ms (99th percentile,
# 0.5 ms the slowest): its bound is 0.4 + 0.2 + 0.1 = 0.7 ms; with the clock offset's ± 0.05 ms,
# 0.75 ms are allowed.
LINK = LinkBound(payload_bytes=4096, echoes=48, fresh=8, median_s=0.2 * MS, q99_s=0.4 * MS,
                 max_s=0.5 * MS, min_s=0.1 * MS)
OFFSET = ClockOffset(offset_s=100.0, uncertainty_s=0.05 * MS, rtt_s=0.1 * MS, probes=8,
                     link=LINK)
ALLOWED = 0.75 * MS
SENT = 10.0


def reply(outside_s: float, claimed_s: float = 1 * MS, untimed_s: float | None = None,
          declared: UntimedWork | None = None, offset: ClockOffset = OFFSET, recheck=None):
    """A QUBO reply whose region starts as the request arrives and claims ``claimed_s``, the
    window ``outside_s`` longer (agent clock = orchestrator clock + 100 s)."""
    t_start = SENT + offset.offset_s + 0.01 * MS
    return check_timed_region(t_start, t_start + claimed_s, claimed_s, untimed_s, SENT,
                              SENT + claimed_s + outside_s, offset, declared, recheck)


def test_the_link_bound_is_the_quantile_plus_the_spread():
    assert LINK.bound_s == pytest.approx(0.7 * MS)
    assert LINK.spread_s == pytest.approx(0.2 * MS)
    bound = LinkBound.of([1 * MS] * 47 + [3 * MS], 2048, 8)
    assert bound.median_s == bound.min_s == 1 * MS and bound.max_s == 3 * MS
    assert bound.q99_s == pytest.approx(1 * MS + 0.53 * 2 * MS)  # linear, at 0.99 × 47
    assert LinkBound.from_dict(LINK.to_dict()) == LINK


def test_a_phase_takes_fresh_echoes_and_states_the_bound_of_the_newest():
    pool, calls = EchoPool(), []

    def echo(shape: Echo) -> float:
        calls.append(shape.payload_bytes)
        return len(calls) * 1e-4

    first = pool.measure(Echo(4096), echo)
    assert (first.echoes, first.fresh) == (MIN_ECHOES, MIN_ECHOES)  # enough for a quantile
    for _ in range(10):
        later = pool.measure(Echo(4096), echo)
    assert (later.fresh, later.echoes) == (FRESH_ECHOES, POOL_ECHOES)  # the newest 48 kept
    assert later.max_s == pytest.approx(len(calls) * 1e-4)
    assert set(calls) == {4096}
    assert payload_bucket(10) == 1024 and payload_bucket(2298) == 4096
    assert payload_bucket(4096) == 4096 and payload_bucket(4097) == 8192


@pytest.mark.parametrize(("work_s", "step"), [
    (0.0, 0.0), (5e-5, 0.0), (1e-3, 1e-3), (1.2e-3, 2e-3), (3e-3, 5e-3), (0.1, 20e-3),
    (100.0, IDLE_STEPS_S[-1]),
])
def test_echoes_wait_the_idle_step_of_the_requests_expected_work(work_s, step):
    assert idle_step(work_s) == step
    assert Echo(64, None, work_s=work_s).idle_s == step


def test_each_idle_step_keeps_its_own_pool_and_says_so():
    """A phase of 100 ms requests is bounded by echoes that waited 20 ms each, never by the
    back-to-back echoes of a 0.1 ms request, and fewer fresh ones are taken (they cost their
    idle time each)."""
    pool, calls = EchoPool(), []

    def echo(shape: Echo) -> float:
        calls.append(shape.idle_s)
        return 1e-4 if shape.idle_s == 0 else 3e-3

    hot = pool.measure(Echo(4096, work_s=0.0), echo)
    cold = pool.measure(Echo(4096, work_s=0.1), echo)  # 100 ms of work: 20 ms idle
    assert (hot.echoes, cold.echoes) == (MIN_ECHOES, MIN_ECHOES)
    assert hot.max_s == 1e-4 and cold.min_s == 3e-3
    again = pool.measure(Echo(4096, work_s=0.1), echo)
    assert again.fresh == FRESH_IDLE_ECHOES and again.idle_s == 0.02
    assert "each after 20 ms idle" in again.describe()
    assert "idle" not in hot.describe()
    assert LinkBound.from_dict(again.to_dict()) == again
    assert LinkBound.from_dict({**LINK.to_dict(), "idle_s": None} | {"idle_s": 0.0}) == LINK


def test_inside_the_allowance_is_on_time_and_the_margin_is_stated():
    check = reply(0.7 * MS)
    assert check.verdict == "on_time" and check.reason is None
    assert check.allowed.total_s == pytest.approx(ALLOWED)
    assert check.margin_s == pytest.approx(0.05 * MS)
    shown = check.to_dict()
    assert shown["allowance"]["link"]["echoes"] == 48
    assert shown["allowance"]["link"]["payload_bytes"] == 4096


@pytest.mark.parametrize("times", [1.05, 1.5, 1.99])
def test_past_the_allowance_is_never_on_time(times):
    """The allowance compared at 2× (a planted bug) lets these pass as on-time answers."""
    check = reply(times * ALLOWED)
    assert check.verdict == "unverified"
    assert check.margin_s < 0
    with pytest.raises(TimingUnverified) as raised:
        raise_unless_on_time("a", "", check)
    assert raised.value.code == "timing_unverified"


def test_declared_untimed_work_is_allowed_once():
    """A reply declaring 5 ms of untimed work (10 ms declared at most) may be 5 ms later than
    the link allows, not 10 (``untimed_s`` counted twice, a planted bug, allows 10)."""
    declared = UntimedWork(max_s=10 * MS, reason="a process per run")
    assert reply(ALLOWED + 4.9 * MS, untimed_s=5 * MS, declared=declared).on_time
    late = reply(ALLOWED + 8 * MS, untimed_s=5 * MS, declared=declared)
    assert late.verdict == "unverified"
    assert late.allowed.total_s == pytest.approx(ALLOWED + 5 * MS)


def test_untimed_s_past_the_declared_maximum_is_inconsistent_by_name():
    declared = UntimedWork(max_s=1 * MS, reason="building the reply")
    check = reply(9 * MS, untimed_s=9 * MS, declared=declared)
    assert check.verdict == "inconsistent"
    assert "past the maximum the driver declares, 0.001 s (building the reply)" in check.reason
    undeclared = reply(9 * MS, untimed_s=9 * MS)
    assert undeclared.verdict == "inconsistent"
    assert "declares no untimed work in its capabilities" in undeclared.reason
    with pytest.raises(AgentError) as raised:
        raise_unless_on_time("a", "", check)
    assert raised.value.code == "timing_inconsistent"
    assert not isinstance(raised.value, TimingUnverified)


def test_lateness_beyond_what_load_explains_is_inconsistent_unless_the_link_is_slow_now():
    limit = max(LOAD_FACTOR * LINK.max_s, LOAD_FLOOR_S)
    assert reply(ALLOWED + 0.9 * limit).verdict == "unverified"
    assert reply(ALLOWED + 1.1 * limit).verdict == "inconsistent"
    # the host became busy meanwhile: a burst of echoes right after the reply takes 0.2 s
    asked = []
    busy = reply(ALLOWED + 1.1 * limit, recheck=lambda: asked.append(1) or 0.2)
    assert busy.verdict == "unverified" and asked == [1]
    assert busy.slowest_echo_s == 0.2 and busy.load_limit_s == pytest.approx(2.0)
    asked.clear()
    reply(ALLOWED + 0.5 * limit, recheck=lambda: asked.append(1) or 0.2)
    assert asked == []  # asked only when the phase's probe cannot explain it


def test_forged_region_and_length_are_inconsistent_whatever_the_delays():
    t0 = SENT + OFFSET.offset_s
    early = check_timed_region(t0 - 1.0, t0 + 0.001, 1.001, None, SENT, SENT + 0.01, OFFSET)
    assert early.verdict == "inconsistent" and "before the request was sent" in early.reason
    length = check_timed_region(t0, t0 + 0.001, 0.1, None, SENT, SENT + 0.2, OFFSET)
    assert length.verdict == "inconsistent" and "actual_s = 0.100000 s" in length.reason


def test_a_phase_recorded_before_link_probes_keeps_the_rule_then_in_force():
    legacy = ClockOffset(100.0, 0.05 * MS, 0.1 * MS, 8)  # no link: an old cassette or store
    assert reply(0.2, offset=legacy).on_time
    assert reply(0.3, offset=legacy).verdict == "unverified"
    # untimed_s as reported, with no declared maximum (as then)
    assert reply(0.9, untimed_s=0.8, offset=legacy).on_time
    check = reply(0.1, offset=legacy)
    assert check.allowed.link_s == LEGACY_LINK_S
    assert "legacy constant" in check.to_dict()["allowance"]["link"]["source"]
    assert check_work(SENT, SENT + 10.0, 0.001, legacy, samples=5).on_time  # not checked then


def test_stages_longer_than_their_region_are_inconsistent():
    """A device timer may run 0.1 % (+ 50 µs) fast; 5 % more work than the region is a claim
    the region cannot hold (a region allowed to hold 10 % more, a planted bug, passes it)."""
    t0 = SENT + OFFSET.offset_s + 0.1 * MS
    check_region("a", "sample 3", t0, t0 + 10 * MS, SENT, SENT + 20 * MS, OFFSET, 10.01 * MS)
    with pytest.raises(AgentError) as raised:
        check_region("a", "sample 3", t0, t0 + 10 * MS, SENT, SENT + 20 * MS, OFFSET,
                     10.5 * MS)
    assert raised.value.code == "timing_inconsistent"
    assert "sample 3: its timed work adds up to 0.010500 s" in str(raised.value)


def test_a_requests_samples_are_allowed_their_declared_untimed_work_each():
    declared = UntimedWork(max_s=1 * MS, reason="load and unload")
    # 10 samples claiming 0.2 ms each in a window of 2 ms each: 18 ms unclaimed
    short = check_work(SENT, SENT + 20 * MS, 2 * MS, OFFSET, samples=10, declared=declared)
    assert short.verdict == "unverified"
    assert short.allowed.untimed_s == pytest.approx(10 * MS)
    assert "10 sample(s) × (0.001 s declared (load and unload))" in short.reason
    # a sample list: what a load and an unload took as requests of their own, per sample too
    listed = check_work(SENT, SENT + 20 * MS, 2 * MS, OFFSET, samples=10, declared=declared,
                        observed_per_sample_s=0.5 * MS)
    assert listed.allowed.untimed_s == pytest.approx(15 * MS)
    assert "+ 0.000500 s observed for a sample's load and unload" in listed.reason
    honest = check_work(SENT, SENT + 10 * MS, 4 * MS, OFFSET, samples=10, declared=declared)
    assert honest.on_time and honest.margin_s == pytest.approx(ALLOWED + 10 * MS - 6 * MS)


def test_a_peer_of_version_3_is_not_told_the_declared_untimed_work():
    """Keys the capabilities gained in protocol 4 would be unknown keys to an older peer."""
    from hilbench.agent.dispatch import capabilities_for_version

    caps = {"workloads": ["qubo", "asc"],
            "qubo": {"solvers": ["sa"], "untimed": {"max_s": 1.0, "reason": "x"}},
            "asc": {"modes": ["single_stream", "samples"],
                    "sample_untimed": {"max_s": 1e-3, "reason": "y"}}}
    assert capabilities_for_version(caps, 4) == caps
    v3 = capabilities_for_version(caps, 3)
    assert "untimed" not in v3["qubo"] and "sample_untimed" not in v3["asc"]
    assert v3["asc"]["modes"] == ["single_stream", "samples"]
    assert capabilities_for_version(caps, 2)["asc"]["modes"] == ["single_stream"]


def test_a_command_longer_than_the_agents_follower_check_gets_the_link_twice():
    """Its reply leaves from the agent's other thread: one more turn, as an echo takes one."""
    short = reply(0.5 * MS, claimed_s=0.2)
    long = reply(0.5 * MS, claimed_s=0.3)
    assert short.allowed.link_s == pytest.approx(LINK.bound_s)
    assert long.allowed.link_s == pytest.approx(2 * LINK.bound_s)
    assert reply(1.3 * MS, claimed_s=0.3).on_time and not reply(1.3 * MS, claimed_s=0.2).on_time
    assert long.to_dict()["allowance"]["link_turns"] == 2


def test_one_slow_echo_does_not_widen_a_short_runs_bound():
    # Under a busy loop per core one echo of 19.5 ms among echoes of median 0.2 ms lifted the
    # bound to 25 ms: a reply 10x late at a 1 ms timeout (9 ms outside) then passed as on time.
    pool = [0.15 * MS] * 10 + [0.2 * MS] * 17 + [0.3 * MS] * 20 + [19.5 * MS]
    bound = LinkBound.of(pool, 4096, 4)
    assert bound.bound_s > 9 * MS  # the pool's own 99th percentile is its slow echo
    # the tail through the median (0.2 ms) and the 75th percentile (0.3 ms) at 0.99
    assert bound.tail_q99_s == pytest.approx(0.2 * MS + 0.1 * MS * math.log(50) / math.log(2))
    assert bound.single_bound_s == pytest.approx(bound.tail_q99_s + 0.15 * MS)
    offset = ClockOffset(offset_s=100.0, uncertainty_s=0.05 * MS, rtt_s=0.1 * MS, probes=8,
                         link=bound)
    late = reply(9 * MS, offset=offset)
    assert late.verdict == "unverified"
    assert "only up to 5 × its claim" in late.reason
    assert reply(0.3 * MS, offset=offset).verdict == "on_time"
    # stored and read back, the pool's body is kept; never above the pool's own quantile
    assert LinkBound.from_dict(bound.to_dict()) == bound
    even = LinkBound.of([1 * MS] * 48, 4096, 4)
    assert even.single_bound_s == pytest.approx(2 * MS) == even.bound_s


def test_a_bound_recorded_before_the_fitted_tail_reads_back_under_its_own_rule():
    new_keys = ("body_s", "body_quantile", "tail_q99_s", "single_bound_s", "tail")
    measured = LinkBound.of([0.1 * MS] * 20 + [0.2 * MS] * 27 + [0.4 * MS], 4096, 4).to_dict()
    assert set(new_keys) <= set(measured)
    old = {k: v for k, v in LINK.to_dict().items() if k not in new_keys}
    assert LinkBound.from_dict(old).bound_s == pytest.approx(0.7 * MS)
    assert LinkBound.from_dict(old).single_bound_s == pytest.approx(0.7 * MS)


def test_a_single_run_uses_the_links_tail_only_as_far_as_its_own_claim():
    # a busy host's echoes: median 0.3 ms, one in eight waits a scheduler turn (8 ms)
    pool = [0.2 * MS] * 12 + [0.3 * MS] * 30 + [8 * MS] * 6
    bound = LinkBound.of(pool, 4096, 4)
    assert bound.bound_s > 9 * MS > bound.single_bound_s
    offset = ClockOffset(offset_s=100.0, uncertainty_s=0.05 * MS, rtt_s=0.1 * MS, probes=8,
                         link=bound)
    # 10x late at 1 ms: out for 9 times its claim, past the typical bound: no evidence
    assert reply(9 * MS, claimed_s=1 * MS, offset=offset).verdict == "unverified"
    # 4x late is within 5 x the claim and the link's tail: on time
    assert reply(4 * MS, claimed_s=1 * MS, offset=offset).verdict == "on_time"
    # the same delay on a 100 ms claim is inside the link's tail: on time
    assert reply(9 * MS, claimed_s=100 * MS, offset=offset).verdict == "on_time"
    # a delay within the typical bound is on time whatever the claim
    assert reply(bound.single_bound_s * 0.9, claimed_s=1 * MS, offset=offset).on_time
