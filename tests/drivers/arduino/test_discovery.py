"""Port discovery by USB VID:PID (pyserial's list_ports), with an explicit override."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from hilbench_drivers.arduino import discovery
from hilbench_drivers.arduino.link import BoardError


def _port(device, vid, pid, serial_number="ABC"):
    return SimpleNamespace(
        device=device, vid=vid, pid=pid, serial_number=serial_number, description="USB"
    )


@pytest.fixture
def ports(monkeypatch):
    from serial.tools import list_ports

    listed: list = []
    monkeypatch.setattr(list_ports, "comports", lambda: listed)
    return listed


def test_auto_finds_the_one_nano_33_ble(ports):
    ports += [_port("/dev/ttyUSB0", 0x0403, 0x6001), _port("/dev/ttyACM3", 0x2341, 0x805A)]
    assert discovery.resolve_port("auto") == "/dev/ttyACM3"


def test_explicit_port_is_used_as_given(ports):
    ports.append(_port("/dev/ttyACM3", 0x2341, 0x805A))
    assert discovery.resolve_port("/dev/ttyACM7") == "/dev/ttyACM7"


def test_no_board_says_how_to_go_on(ports):
    ports.append(_port("/dev/ttyACM0", 0x2341, 0x8057))  # a Nano 33 IoT: not this board
    with pytest.raises(BoardError, match=r"no Arduino Nano 33 BLE found \(USB 2341:805a\)") as err:
        discovery.resolve_port("auto")
    assert "emulate" in str(err.value) and err.value.code == "device_unreachable"


def test_two_boards_must_be_chosen_between(ports):
    ports += [
        _port("/dev/ttyACM0", 0x2341, 0x805A, "A1"),
        _port("/dev/ttyACM1", 0x2341, 0x805A, "B2"),
    ]
    with pytest.raises(BoardError, match="2 Nano 33 BLE boards found") as err:
        discovery.resolve_port("auto")
    assert "/dev/ttyACM0 (A1)" in str(err.value) and "--port" in str(err.value)
