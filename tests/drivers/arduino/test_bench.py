"""`hilbench bench arduino-serial` measures the driver's own load and run path."""

from __future__ import annotations

import re

import pytest
from click.testing import CliRunner

from hilbench.cli import cli
from hilbench_drivers.arduino.bench import wire_bytes_for_sample
from hilbench_drivers.arduino.protocol import encode_frame


def test_wire_bytes_count_every_frame_of_a_sample_load():
    data = bytes(range(1, 256)) * 4  # 1020 bytes, one chunk, no zeros
    total = wire_bytes_for_sample(data, chunk=1024)
    chunk_frame = 1 + len(encode_frame(0x03, 1, bytes(4) + data))
    assert chunk_frame <= total < chunk_frame + 100


@pytest.mark.slow
def test_bench_prints_transfer_and_overhead_beside_wire_time(emulator):
    result = CliRunner().invoke(
        cli,
        ["bench", "arduino-serial", "--port", emulator.path, "--samples", "2", "--runs", "3"],
    )
    assert result.exit_code == 0, result.output
    last = result.output.strip().splitlines()[-1]
    match = re.match(
        r"arduino-serial: sample ([\d.]+) ms \(wire ([\d.]+) ms at 115200 baud\), "
        r"overhead (\d+) us",
        last,
    )
    assert match, last
    assert float(match.group(1)) > 0
    assert 2000 < float(match.group(2)) < 4000  # 32 000 B + framing at 11 520 B/s
