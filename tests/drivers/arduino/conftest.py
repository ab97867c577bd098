"""Fixtures: the firmware's host build on a real pseudo-terminal, and a scripted fake board.

The host build is found (firmware/build/host, or $HILBENCH_ARDUINO_HOST) or built with CMake.
Where it cannot be built the tests skip, except under CI=true, where they fail: CI installs the
compiler and builds the firmware first.
"""

from __future__ import annotations

import os
import threading
import tty
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from hilbench.workloads.asc.quant import QuantisedModel
from hilbench_drivers.arduino.emulator import HostEmulator, host_build, host_build_for_model
from hilbench_drivers.arduino.link import BoardError, SerialLink
from hilbench_drivers.arduino.protocol import Frame, FrameDecoder, encode_frame

REPO = Path(__file__).resolve().parents[3]
VECTORS = REPO / "protocols" / "vectors" / "asc_int8"


@pytest.fixture(scope="session")
def host_program() -> Path:
    try:
        return host_build(build=True)
    except BoardError as exc:
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI must build the firmware's host build: {exc}")
        pytest.skip(f"no firmware host build: {exc}")


@pytest.fixture(scope="session")
def vectors_program(host_program: Path) -> Path:
    """The host build compiled with the reference vectors' model (the emulator's flashing)."""
    return host_build_for_model(QuantisedModel.load(VECTORS / "model.npz"))


@pytest.fixture
def emulator(vectors_program: Path) -> Iterator[HostEmulator]:
    """An emulated board holding the vectors' model, so outputs compare with the vectors."""
    with HostEmulator(program=vectors_program) as emu:
        yield emu


@pytest.fixture
def link(emulator: HostEmulator) -> Iterator[SerialLink]:
    serial_link = SerialLink.open(emulator.path, timeout_s=2.0)
    serial_link.discard_input()
    yield serial_link
    serial_link.close()


class FakeBoard:
    """A pty whose far end is a Python function: ``respond(frame) -> bytes to send``."""

    def __init__(self, respond: Callable[[Frame], bytes]) -> None:
        self.master, slave = os.openpty()
        tty.setraw(slave)
        self.path = os.ttyname(slave)
        self._slave = slave
        self.respond = respond
        self.received: list[Frame] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        import select

        decoder = FrameDecoder()
        while not self._stop.is_set():
            ready, _, _ = select.select([self.master], [], [], 0.05)
            if not ready:
                continue
            try:
                data = os.read(self.master, 4096)
            except OSError:
                return
            for item in decoder.feed(data):
                if isinstance(item, Frame):
                    self.received.append(item)
                    reply = self.respond(item)
                    if reply:
                        os.write(self.master, reply)

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=2)
        os.close(self.master)
        os.close(self._slave)


@pytest.fixture
def fake_board() -> Iterator[Callable[[Callable[[Frame], bytes]], FakeBoard]]:
    boards: list[FakeBoard] = []

    def make(respond: Callable[[Frame], bytes]) -> FakeBoard:
        boards.append(FakeBoard(respond))
        return boards[-1]

    yield make
    for board in boards:
        board.close()


def reply(msg_type: int, frame: Frame, payload: bytes = b"") -> bytes:
    return encode_frame(msg_type, frame.seq, payload)
