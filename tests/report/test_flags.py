"""Yes/no figures (feasible, overrun, stopped_early) are booleans in the code and 1.0 / 0.0 in
the store: converted at that boundary only, so stores and cassettes recorded before keep
replaying to the same bytes."""

from __future__ import annotations

from hilbench.documents import flag, is_set


def test_a_flag_is_stored_as_the_number_earlier_stores_hold():
    assert flag(True) == 1.0 and isinstance(flag(True), float)
    assert flag(False) == 0.0 and isinstance(flag(False), float)


def test_a_stored_flag_reads_back_as_a_boolean():
    assert is_set(1.0) is True
    assert is_set(0.0) is False
    assert is_set(None) is None
    assert all(is_set(flag(v)) is v for v in (True, False))
