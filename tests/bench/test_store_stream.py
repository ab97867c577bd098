"""`hilbench bench store-stream` at an instrument's rate (issue 35: 1 MS/s for 1 h with flat
memory and the store ≤ 1.2 × the raw float32 size), here for 8 s: the size ratio does not
depend on the length, and the memory must not grow once one batch's working set is in."""

from __future__ import annotations

import re

import pytest

from tests.subprocesses import hilbench

pytestmark = [pytest.mark.slow, pytest.mark.serial, pytest.mark.timeout(120)]


def test_a_million_samples_a_second_stay_near_raw_size_with_flat_memory(tmp_path):
    proc = hilbench("bench", "store-stream", "--rate", "1000000", "--seconds", "8",
                    "--db", tmp_path / "s.sqlite", timeout=110)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "read back 8,000,000 samples batch by batch" in out
    ratio = float(re.search(r"= ([\d.]+) x the raw float32 values", out).group(1))
    assert 1.0 <= ratio <= 1.2, out
    grew = re.search(r"while streaming \(first batch in -> end of write\) ([+-][\d.]+) MiB; "
                     r"while reading back \(first batch read -> last\) ([+-][\d.]+) MiB", out)
    assert grew, out
    # measured: +7.6 MiB writing, +23 MiB reading 12 s (the allocator settling in), flat after
    assert float(grew.group(1)) < 50 and float(grew.group(2)) < 50, out
