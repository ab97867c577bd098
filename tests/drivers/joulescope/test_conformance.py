"""The JS220 driver passes the instrument conformance suite against the simulated JS220."""

from __future__ import annotations

import pytest

from hilbench.testing.instrument_conformance import assert_conformant, check_instrument
from hilbench_drivers.joulescope import Joulescope220, Js220Settings
from tests.drivers.joulescope.conftest import pulses


@pytest.mark.parametrize("rate_hz", [1_000_000, 10_000])
def test_js220_is_conformant_against_its_simulator(feed, make_sim, rate_hz):
    sim = make_sim(drift_ppm=40.0, noise_std_w=1e-4)
    report = assert_conformant(
        lambda: Joulescope220("", Js220Settings(rate_hz=rate_hz), api=lambda: sim),
        expect_simulated=True, stimulus=pulses(feed))
    assert report.edges == 6 and report.samples > 0.3 * rate_hz


def test_the_suite_catches_a_dishonest_simulated_flag(feed, make_sim):
    """The check can fail: a simulator that says it is real is named."""
    sim = make_sim()
    report = check_instrument(lambda: Joulescope220("", Js220Settings(), api=lambda: sim),
                              expect_simulated=False, acquire_s=0.2)
    assert "simulated flag honest" in report.failures
