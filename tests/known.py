"""Known defects the suite names instead of hiding: each mark says which issue holds it."""

from __future__ import annotations

import pytest

# Issue 30, left open: the link bound (echoes of the request's size) does not cover the work a
# test double does outside its claimed region (2-4 ms for the cpu driver behind a test wrapper,
# ~1.2 ms for a protocol-2 peer's first sample, on a quiet 2-core host), so its honest runs end
# unverified — every attempt for some doubles, now and then for others (the early-stopping SA
# double, the spec agent, the ASC cpu agent without an instrument: 1-4 of 10 suite runs) — and
# the test cannot reach what it checks. Not strict: where it passes, it passes (XPASS).
DOUBLE_UNVERIFIED = pytest.mark.xfail(
    strict=False,
    reason="issue 30 (open): this test double's work outside its claim passes the link bound "
           "measured by echoes, so its honest runs end unverified")
