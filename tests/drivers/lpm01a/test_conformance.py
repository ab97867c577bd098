"""The LPM01A driver passes the instrument conformance suite against its emulator, over a real
pseudo-terminal, in both data formats."""

from __future__ import annotations

import pytest

from hilbench.testing.instrument_conformance import assert_conformant
from hilbench_drivers.lpm01a import Lpm01a, Lpm01aSettings
from tests.drivers.lpm01a.conftest import timed_regions


@pytest.mark.parametrize("rate_hz", [1_000, 100_000])  # ascii_dec, bin_hexa
def test_lpm01a_is_conformant_against_its_emulator(feed, board, rate_hz):
    report = assert_conformant(lambda: Lpm01a(board.path, Lpm01aSettings(rate_hz=rate_hz)),
                               expect_simulated=True, stimulus=timed_regions(feed))
    assert report.edges == 6 and report.samples > 0.3 * rate_hz
