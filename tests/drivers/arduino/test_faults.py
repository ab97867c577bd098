"""Faults on the serial line each give their own clear error or recovery, and nothing hangs:
garbage, a truncated chunk, a bad checksum, a reset in the middle of a sample, a silent board,
the wrong firmware; the emulator never outlives its parent."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
import zlib

import numpy as np
import pytest

from hilbench.agent.driver import DriverError
from hilbench_drivers.arduino import ArduinoDriver
from hilbench_drivers.arduino.board import Board, WrongFirmware
from hilbench_drivers.arduino.link import (
    BoardRefused,
    BoardReset,
    Garbled,
    NoAnswer,
    SerialLink,
)
from hilbench_drivers.arduino.protocol import Kind, MsgType, encode_frame, load_begin

from .conftest import reply

PCM = (np.arange(16000) % 200 - 100).astype("<i2").tobytes()


class Tamper:
    """Wraps a serial port and changes the n-th write that carries a given message type."""

    def __init__(self, port, msg_type: MsgType, nth: int, change) -> None:
        self._port, self._type, self._nth, self._change = port, msg_type, nth, change
        self._count = 0

    def write(self, data: bytes):
        from cobs import cobs

        frame = cobs.decode(data[1:-1])  # leading and trailing delimiter
        if frame[0] == self._type:
            self._count += 1
            if self._count == self._nth:
                data = self._change(data)
        return self._port.write(data)

    def __getattr__(self, name):
        return getattr(self._port, name)


def test_garbage_before_a_request_is_skipped(link):
    board = Board(link)
    link.port.write(b"\x13\x37 line noise \xff\xfe" * 20)  # the board sees garbage first
    assert board.identify().board == "host-build"


def test_truncated_chunk_is_sent_again(link):
    board = Board(link)
    board.identify()
    link.port = Tamper(link.port, MsgType.LOAD_CHUNK, 3, lambda d: d[: len(d) // 2] + b"\x00")
    board.load(0, Kind.AUDIO_PCM16, PCM)  # the board reported the broken frame; it was resent
    assert board.run(0).preprocess_us is not None


def test_chunk_with_a_flipped_bit_is_sent_again(link):
    board = Board(link)
    board.identify()

    def flip(data: bytes) -> bytes:
        b = bytearray(data)
        b[40] = b[40] ^ 0x01 or 0x02  # stays non-zero: a bit error, not a delimiter
        return bytes(b)

    link.port = Tamper(link.port, MsgType.LOAD_CHUNK, 5, flip)
    board.load(0, Kind.AUDIO_PCM16, PCM)
    assert board.run(0).index == 0


def test_wrong_whole_sample_checksum_is_refused(link):
    board = Board(link)
    board.identify()
    link.request(
        MsgType.LOAD_BEGIN, load_begin(0, Kind.FEATURES_INT8, 3960, 1234), {MsgType.LOAD_READY}
    )
    data = bytes(3960)
    for offset in range(0, 3960, 1024):
        link.request(
            MsgType.LOAD_CHUNK, offset.to_bytes(4, "little") + data[offset : offset + 1024]
        )
    with pytest.raises(BoardRefused) as err:
        link.request(MsgType.LOAD_END, (0).to_bytes(2, "little"), {MsgType.LOADED})
    assert err.value.code == "sample_checksum"
    assert zlib.crc32(data) != 1234


def test_load_end_before_all_chunks_is_refused(link):
    board = Board(link)
    board.identify()
    link.request(MsgType.LOAD_BEGIN, load_begin(0, Kind.AUDIO_PCM16, 32000, zlib.crc32(PCM)))
    link.request(MsgType.LOAD_CHUNK, (0).to_bytes(4, "little") + PCM[:1024])
    with pytest.raises(BoardRefused, match="1024 of 32000") as err:
        link.request(MsgType.LOAD_END, (0).to_bytes(2, "little"))
    assert err.value.code == "sample_incomplete"


def test_reset_in_the_middle_of_a_sample_invalidates_and_reidentifies(emulator):
    drv = ArduinoDriver(port=emulator.path)
    try:
        drv.capabilities()
        board = drv._connect()
        original = board.link.port

        class ResetAfterChunks(Tamper):
            def write(self, data):
                self._count += 1
                if self._count == 6:
                    emulator.reset()
                    time.sleep(0.2)  # the banner arrives while the load waits for a reply
                return original.write(data)

        board.link.port = ResetAfterChunks(original, MsgType.LOAD_CHUNK, 0, None)
        audio = np.zeros(16000, np.float32)
        with pytest.raises(DriverError, match="reset") as err:
            drv.load({"workload": "asc", "part": "sample", "index": 0}, [audio])
        assert err.value.code == "device_reset"
        board.link.port = original
        with pytest.raises(DriverError) as err:  # the sample did not survive the reset
            drv.run({"workload": "asc", "mode": "single_stream", "index": 0}, threading.Event())
        assert err.value.code == "not_loaded"
        drv.load({"workload": "asc", "part": "sample", "index": 0}, [audio])
        body = drv.run({"workload": "asc", "mode": "single_stream", "index": 0}, threading.Event())
        assert body.body["index"] == 0
    finally:
        drv.close()


def test_silent_board_times_out_with_a_clear_message(emulator):
    link = SerialLink.open(emulator.path, timeout_s=0.3, retries=1)
    try:
        link.discard_input()
        emulator.pause()
        t0 = time.monotonic()
        with pytest.raises(NoAnswer, match=r"no answer to IDENTIFY within 0\.3 s") as err:
            Board(link).identify()
        assert err.value.code == "device_timeout"
        assert time.monotonic() - t0 < 3
    finally:
        emulator.resume()
        link.close()


def test_garbage_from_the_board_is_named_garbage(fake_board):
    board = fake_board(lambda frame: b"\x01\x02\x03garbage\x00" * 3)
    link = SerialLink.open(board.path, timeout_s=0.3, retries=0)
    try:
        with pytest.raises(Garbled, match="garbage") as err:
            Board(link).identify()
        assert err.value.code == "device_garbage"
    finally:
        link.close()


def test_wrong_protocol_version_is_refused(fake_board):
    identity = b"board=arduino-nano-33-ble fw=0.9.0 proto=9 model=x"
    board = fake_board(lambda frame: reply(MsgType.IDENT, frame, identity))
    link = SerialLink.open(board.path, timeout_s=0.5)
    try:
        with pytest.raises(WrongFirmware, match="protocol 9; this driver speaks protocol 1"):
            Board(link).identify()
    finally:
        link.close()


def test_stale_reply_is_not_taken_for_the_next_answer(fake_board):
    def respond(frame):
        stale = encode_frame(MsgType.IDENT, (frame.seq - 1) % 255 or 255, b"proto=0 stale=1")
        fields = b"board=b fw=1 proto=1 model=m classes=a,b sample_rate=16000 sample_count=16000 "
        fields += b"frames=99 filters=40 chunk=1024 capacity=1 simulated=0"
        return stale + reply(MsgType.IDENT, frame, fields)

    board = fake_board(respond)
    link = SerialLink.open(board.path, timeout_s=0.5)
    try:
        assert Board(link).identify().board == "b"
        assert link.stale_replies == 1
    finally:
        link.close()


def test_boot_banner_while_waiting_is_a_reset(fake_board):
    board = fake_board(lambda frame: encode_frame(MsgType.BOOT, 0, b"board=b proto=1"))
    link = SerialLink.open(board.path, timeout_s=0.5)
    try:
        with pytest.raises(BoardReset):
            link.request(MsgType.RUN, (0).to_bytes(2, "little"), {MsgType.RESULT})
    finally:
        link.close()


@pytest.mark.parametrize("frozen", [False, True], ids=["running", "frozen by pause()"])
def test_emulator_dies_with_its_parent(host_program, frozen):
    """SIGKILL of the process that started it ends the emulator, even a board frozen with
    SIGSTOP (which reads no stdin and would hold a SIGTERM pending)."""
    code = (
        "import sys, time\n"
        "from pathlib import Path\n"
        "from hilbench_drivers.arduino.emulator import HostEmulator\n"
        f"emu = HostEmulator(program=Path({str(host_program)!r}))\n"
        "emu.start()\n"
        f"if {frozen}: emu.pause()\n"
        "print(emu.pid, flush=True)\n"
        "time.sleep(60)\n"
    )
    parent = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        child = int(parent.stdout.readline())
        os.kill(child, 0)  # running
        parent.send_signal(signal.SIGKILL)  # no clean-up code runs in the parent
        parent.wait(timeout=5)
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            if not _alive(child):
                break
            time.sleep(0.05)
        else:
            os.kill(child, signal.SIGKILL)
            pytest.fail("the emulator outlived its parent")
    finally:
        if parent.poll() is None:
            parent.kill()


def _alive(pid: int) -> bool:
    """Running or stopped; a zombie waiting for init to reap it counts as gone."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def test_a_board_that_disappears_is_device_lost(host_program):
    from hilbench_drivers.arduino.emulator import HostEmulator

    emu = HostEmulator(program=host_program)
    drv = ArduinoDriver(port=emu.start())
    try:
        drv.load({"workload": "asc", "part": "sample", "index": 0}, [np.zeros(16000, np.float32)])
        emu.stop()  # the pty vanishes, as a USB port does when the board is unplugged
        with pytest.raises(DriverError) as err:
            drv.run({"workload": "asc", "mode": "single_stream", "index": 0}, threading.Event())
        assert err.value.code == "device_lost", err.value
        assert "unplugged or reset" in str(err.value)
    finally:
        drv.close()
        emu.stop()


def test_corruption_that_passes_the_frame_crc_is_caught_by_the_sample_crc(link):
    """A chunk altered before its frame checksum was computed (a host-side bug, a repeated
    chunk): the whole-sample CRC at LOAD_END refuses it and the driver sends the sample again."""
    from cobs import cobs

    board = Board(link)
    board.identify()

    def alter(data: bytes) -> bytes:
        raw = bytearray(cobs.decode(data[1:-1]))
        raw[10] ^= 0xFF  # a data byte of the chunk
        return b"\x00" + encode_frame(raw[0], raw[1], bytes(raw[2:-4]))

    link.port = Tamper(link.port, MsgType.LOAD_CHUNK, 2, alter)
    board.load(0, Kind.AUDIO_PCM16, PCM)  # first attempt refused, second one clean
    assert link.port._count > 32  # every chunk went twice (32 per attempt)


def test_commands_during_a_repeat_are_busy_and_stop_ends_it(link):
    from hilbench_drivers.arduino.protocol import Stage, parse_repeat, repeat

    Board(link).identify()
    repeat_seq = link.send(MsgType.REPEAT, repeat(0, Stage.IDLE, 20_000))
    time.sleep(0.1)
    with pytest.raises(BoardRefused) as err:
        link.request(MsgType.IDENTIFY, expect={MsgType.IDENT}, resend_on_timeout=False)
    assert err.value.code == "busy"
    stop_seq = link.send(MsgType.STOP)
    assert stop_seq != repeat_seq
    done = link._wait(repeat_seq, {MsgType.REPEAT_DONE}, 5.0, None)
    assert not isinstance(done, str), done
    result = parse_repeat(done.payload)
    assert result.stopped_early and result.elapsed_us < 5_000_000
