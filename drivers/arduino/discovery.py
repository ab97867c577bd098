"""Finding the board's serial port: USB VID:PID 2341:805A (Arduino Nano 33 BLE, mbed core)."""

from __future__ import annotations

from dataclasses import dataclass

from hilbench_drivers.arduino.link import BoardError

ARDUINO_VID = 0x2341
NANO_33_BLE_PID = 0x805A


@dataclass(frozen=True)
class FoundPort:
    device: str
    description: str
    serial_number: str | None


def find_boards(vid: int = ARDUINO_VID, pid: int = NANO_33_BLE_PID) -> list[FoundPort]:
    """Serial ports whose USB VID:PID is the Nano 33 BLE's (via pyserial's list_ports)."""
    try:
        from serial.tools import list_ports
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise BoardError(
            "the arduino driver needs pyserial: pip install 'hilbench[arduino]'", "no_sdk"
        ) from exc
    return [
        FoundPort(p.device, p.description or "", p.serial_number)
        for p in list_ports.comports()
        if p.vid == vid and p.pid == pid
    ]


def resolve_port(option: str) -> str:
    """An explicit path is used as given; ``auto`` needs exactly one matching board."""
    if option != "auto":
        return option
    boards = find_boards()
    if len(boards) == 1:
        return boards[0].device
    if not boards:
        raise BoardError(
            f"no Arduino Nano 33 BLE found (USB {ARDUINO_VID:04x}:{NANO_33_BLE_PID:04x}); plug "
            "it in, or give the port explicitly (--port /dev/ttyACM0), or use "
            "`hilbench arduino emulate`",
            "device_unreachable",
        )
    listed = ", ".join(f"{b.device} ({b.serial_number or 'no serial'})" for b in boards)
    raise BoardError(
        f"{len(boards)} Nano 33 BLE boards found ({listed}); choose one with --port",
        "device_unreachable",
    )
