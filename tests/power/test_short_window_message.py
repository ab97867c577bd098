"""A window too short for a power figure says so in words a reader understands, the same for
every run of a table (it used to read `active window 444.82..444.821 s holds 0 usable …`)."""

from __future__ import annotations

import numpy as np
import pytest

from hilbench.power.estimators import PhaseWindow, phase_power
from hilbench.power.source import SourceInfo


def test_a_window_shorter_than_two_readings_names_its_cause():
    t = np.arange(0.0, 1.0, 0.001)  # one reading a millisecond
    watts = np.full(t.shape, 38.0)
    with pytest.raises(ValueError) as info:
        phase_power(t, watts, PhaseWindow("active", 0.5002, 0.5011),
                    SourceInfo("meter", "W", 0.001))
    assert str(info.value) == (
        "too short for a power figure: the 900 µs active window holds 0 whole meter "
        "reading(s) (one every 1 ms, boundary policy 'exclude'); at least 2 are needed")
