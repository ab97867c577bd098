"""`hilbench arduino probe|emulate`: the commands a person without a board starts with."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

from click.testing import CliRunner

from hilbench.cli import cli
from hilbench_drivers.arduino.protocol import MsgType

from .conftest import reply


def test_probe_identifies_the_emulated_board(emulator):
    result = CliRunner().invoke(cli, ["arduino", "probe", "--port", emulator.path])
    assert result.exit_code == 0, result.output
    assert "host-build (simulated)" in result.output
    assert "protocol 1" in result.output


def test_probe_names_each_reason_and_exits_nonzero(fake_board, emulator):
    runner = CliRunner()
    missing = runner.invoke(cli, ["arduino", "probe", "--port", "/dev/no-such-board"])
    assert missing.exit_code == 3 and "cannot open serial port" in missing.output

    emulator.pause()
    try:
        silent = runner.invoke(
            cli, ["arduino", "probe", "--port", emulator.path, "--timeout", "0.2"]
        )
    finally:
        emulator.resume()
    assert silent.exit_code == 3 and "no answer to IDENTIFY" in silent.output

    noisy = fake_board(lambda frame: b"\x05\x06\x07\x00")
    garbage = runner.invoke(cli, ["arduino", "probe", "--port", noisy.path, "--timeout", "0.2"])
    assert garbage.exit_code == 3 and "garbage" in garbage.output

    old = fake_board(lambda frame: reply(MsgType.IDENT, frame, b"fw=0.1 proto=0"))
    wrong = runner.invoke(cli, ["arduino", "probe", "--port", old.path])
    assert wrong.exit_code == 3 and "protocol 0" in wrong.output


def test_emulate_prints_the_pty_path_on_its_own_line(host_program):
    env = {**os.environ, "HILBENCH_ARDUINO_HOST": str(host_program)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "hilbench", "arduino", "emulate", "--quiet"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        path = proc.stdout.readline().strip()
        assert path.startswith("/dev/pts/")
        probe = CliRunner().invoke(cli, ["arduino", "probe", "--port", path])
        assert probe.exit_code == 0, probe.output
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=10)
    assert proc.returncode == 0


def test_help_explains_the_commands():
    out = CliRunner().invoke(cli, ["arduino", "--help"]).output
    assert "emulate" in out and "probe" in out and "pseudo-terminal" in out

