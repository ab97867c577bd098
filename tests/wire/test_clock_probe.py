"""One clock probe's figures against the orchestrator's own window (hilbench.wire.link): the
agent's stated hold (t3 − t2) is its word, so one that cannot be (below zero, longer than the
whole round trip, not a number) is refused instead of moving the offset's uncertainty."""

from __future__ import annotations

import math

import pytest

from hilbench.wire.link import probe_round_trip


def test_an_honest_probe_gives_the_round_trip_without_the_hold_and_the_offset():
    # agent clock 5 s ahead; 2 ms out, 1 ms held, 1 ms back
    rtt, offset = probe_round_trip(10.0, 15.001, 15.002, 10.003)
    assert rtt == pytest.approx(0.002)
    assert offset == pytest.approx(5.0)


@pytest.mark.parametrize(("t2", "t3", "says"), [
    (15.001, 14.001, "sent 1.000000 s before its ping arrived"),
    (15.0, 15.004, "held the ping 0.004000 s, longer than the 0.003000 s"),
    (math.nan, 15.0, "not finite"),
    (15.0, math.inf, "not finite"),
], ids=["hold below zero", "hold past the round trip", "nan", "inf"])
def test_a_hold_that_cannot_be_is_refused_by_name(t2, t3, says):
    with pytest.raises(ValueError, match=says):
        probe_round_trip(10.0, t2, t3, 10.003)


def test_clock_reads_that_touch_the_window_within_a_microsecond_pass():
    rtt, _ = probe_round_trip(10.0, 15.0, 15.0 - 5e-7, 10.003)
    assert rtt == pytest.approx(0.003, abs=1e-6)
