"""Single-stream stages reach the simulated meter in batches, in order and stamped when they
happened, with the meter held up to what is told (SIM:HOLD) until the device reports live again
(SIM:LIVE): no write wakes the meter between two samples, and no reading is computed stale."""

from __future__ import annotations

import socket
import threading
import time

from hilbench.clock import bench_now
from hilbench.sim.device_link import FLUSH_S, MAX_DEFERRED, SimulatedDeviceLink


class LineSink:
    """A TCP listener that keeps every line it receives, and answers ``SIM:SYNC?`` as a meter
    does (counted in ``syncs``, not kept)."""

    def __init__(self) -> None:
        self._server = socket.create_server(("127.0.0.1", 0))
        self.address = f"127.0.0.1:{self._server.getsockname()[1]}"
        self.data = b""
        self.syncs = 0
        self.arrived = threading.Condition()
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        conn, _ = self._server.accept()
        while chunk := conn.recv(65536):
            with self.arrived:
                self.data += chunk
                while b"SIM:SYNC?\n" in self.data:
                    self.data = self.data.replace(b"SIM:SYNC?\n", b"", 1)
                    self.syncs += 1
                    conn.sendall(b"1\n")
                self.arrived.notify_all()

    def lines(self, count: int, timeout_s: float = 2.0) -> list[str]:
        with self.arrived:
            self.arrived.wait_for(lambda: self.data.count(b"\n") >= count, timeout_s)
            return self.data.decode().splitlines()


def hold_stamp(line: str) -> float:
    assert line.startswith("SIM:HOLD ")
    return float(line.split()[1])


def test_a_run_of_deferred_samples_holds_the_meter_and_the_next_report_lifts_it():
    sink = LineSink()
    link = SimulatedDeviceLink(sink.address)
    t = bench_now()
    link.defer([("preprocessing", t - 3.0), ("inference", t - 2.5), ("idle", t - 2.0)])
    lines = sink.lines(4)  # one write: the changes, then told up to a stamp read after them
    assert lines[:3] == [f"SIM:STAT preprocessing,{t - 3.0!r}",
                         f"SIM:STAT inference,{t - 2.5!r}", f"SIM:STAT idle,{t - 2.0!r}"]
    assert t <= hold_stamp(lines[3]) <= bench_now()
    link.defer([("inference", t - 1.0), ("idle", t - 0.5)])
    assert len(sink.lines(5, timeout_s=FLUSH_S / 5)) == 4  # nothing written between samples
    link.state("inference", t)
    assert sink.lines(8)[4:] == [f"SIM:STAT inference,{t - 1.0!r}", f"SIM:STAT idle,{t - 0.5!r}",
                                 f"SIM:STAT inference,{t!r}", "SIM:LIVE"]
    assert link.writes == 2 and sink.syncs == 1  # the live report waited for the meter
    link.close()
    assert len(sink.lines(9, timeout_s=0.2)) == 8  # live: nothing left to tell


def test_a_long_single_stream_is_told_in_bounded_batches_and_closing_tells_the_rest():
    sink = LineSink()
    link = SimulatedDeviceLink(sink.address)
    link.defer([("idle", 0.0)])
    link.defer([("idle", float(i)) for i in range(1, MAX_DEFERRED)])
    assert len(sink.lines(2)) == 2
    link.defer([("idle", float(MAX_DEFERRED))])  # MAX_DEFERRED wait: told within FLUSH_S
    assert len(sink.lines(MAX_DEFERRED + 3)) == MAX_DEFERRED + 3
    link.defer([("idle", -1.0)])
    link.close()
    assert sink.lines(MAX_DEFERRED + 5)[-2:] == ["SIM:STAT idle,-1.0", "SIM:LIVE"]


def test_held_changes_are_told_once_flush_s_has_passed():
    sink = LineSink()
    link = SimulatedDeviceLink(sink.address)
    link.defer([("idle", 1.0)])
    link.defer([("idle", 2.0)])
    time.sleep(FLUSH_S)
    link.defer([("idle", 3.0)])
    lines = sink.lines(5)
    assert lines[2:4] == ["SIM:STAT idle,2.0", "SIM:STAT idle,3.0"]
    assert hold_stamp(lines[4]) > hold_stamp(lines[1]) + FLUSH_S
    link.close()


def test_a_device_that_stamps_its_samples_holds_before_the_first_start_and_goes_live_when_quiet():
    sink = LineSink()
    link = SimulatedDeviceLink(sink.address)
    before = bench_now()
    s0 = link.begin()  # live: held, then the sample's start stamped, so none of it is read
    lines = sink.lines(1)
    assert len(lines) == 1 and before <= hold_stamp(lines[0]) <= s0
    t = bench_now()
    link.defer([("inference", s0), ("idle", t)])
    s1 = link.begin()  # a sample that outlasts FLUSH_S: the rest told, held at its start
    lines = sink.lines(4, timeout_s=10 * FLUSH_S)
    assert lines[1:] == [f"SIM:STAT inference,{s0!r}", f"SIM:STAT idle,{t!r}",
                         f"SIM:HOLD {s1!r}"]
    t = bench_now()
    link.defer([("inference", s1), ("idle", t)])
    deadline = time.monotonic() + 10 * FLUSH_S  # quiet from here: told, then live again
    while sink.lines(0)[-1] != "SIM:LIVE" and time.monotonic() < deadline:
        time.sleep(0.005)
    lines = sink.lines(0)
    assert lines[4:6] == [f"SIM:STAT inference,{s1!r}", f"SIM:STAT idle,{t!r}"]
    assert lines[6:] in (["SIM:LIVE"], [lines[6], "SIM:LIVE"])  # at once, or FLUSH_S after
    assert link.writes == len(lines) - 4  # 1 + 3 lines, then 3 or 4
    link.close()
    time.sleep(0.1)
    assert sink.lines(0) == lines  # live: nothing left to tell


def test_a_stage_change_carries_its_marker_level_in_the_same_write():
    """The emulated board's marker pin follows its stage (high in a timed stage, low at idle):
    the level goes out with the state line and its stamp, one write, deferred changes first,
    and a held meter is released as for any reported state."""
    from hilbench_drivers.arduino import marker_level

    sink = LineSink()
    link = SimulatedDeviceLink(sink.address)
    t = bench_now()
    link.defer([("inference", t - 1.0), ("idle", t - 0.5)])  # written at once: not held yet
    assert hold_stamp(sink.lines(3)[2]) >= t
    link.defer([("preprocessing", t - 0.2)])  # held: waits for the next write (on a slow
    link.state("inference", t, marker=marker_level("inference"))  # host: a HOLD of its own)
    link.state("idle", t + 1.0, marker=marker_level("idle"))
    told = [x for x in sink.lines(9 if link.writes == 4 else 8)[3:]
            if not x.startswith("SIM:HOLD")]
    assert told == [f"SIM:STAT preprocessing,{t - 0.2!r}", f"SIM:STAT inference,{t!r}",
                    f"SIM:MARK 1,{t!r}", "SIM:LIVE", f"SIM:STAT idle,{t + 1.0!r}",
                    f"SIM:MARK 0,{t + 1.0!r}"]
    link.close()
