"""Single-stream stages reach the simulated meter with the device's next report, in order and
stamped when they happened, so no write wakes the meter between two samples."""

from __future__ import annotations

import socket
import threading

from hilbench.sim.device_link import MAX_DEFERRED, SimulatedDeviceLink


class LineSink:
    """A TCP listener that keeps every line it receives."""

    def __init__(self) -> None:
        self._server = socket.create_server(("127.0.0.1", 0))
        self.address = f"127.0.0.1:{self._server.getsockname()[1]}"
        self.data = b""
        self.arrived = threading.Condition()
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        conn, _ = self._server.accept()
        while chunk := conn.recv(65536):
            with self.arrived:
                self.data += chunk
                self.arrived.notify_all()

    def lines(self, count: int, timeout_s: float = 2.0) -> list[str]:
        with self.arrived:
            self.arrived.wait_for(lambda: self.data.count(b"\n") >= count, timeout_s)
            return self.data.decode().splitlines()


def test_deferred_stages_go_first_with_the_next_report():
    sink = LineSink()
    link = SimulatedDeviceLink(sink.address)
    link.defer([("preprocessing", 1.0), ("inference", 1.5), ("idle", 2.0)])
    assert sink.lines(1, timeout_s=0.2) == []  # nothing written between samples
    link.state("inference", 3.0)
    assert sink.lines(4) == ["SIM:STAT preprocessing,1.0", "SIM:STAT inference,1.5",
                             "SIM:STAT idle,2.0", "SIM:STAT inference,3.0"]
    link.close()


def test_a_long_single_stream_is_told_in_bounded_batches_and_closing_tells_the_rest():
    sink = LineSink()
    link = SimulatedDeviceLink(sink.address)
    link.defer([("idle", float(i)) for i in range(MAX_DEFERRED)])
    assert len(sink.lines(MAX_DEFERRED)) == MAX_DEFERRED
    link.defer([("idle", -1.0)])
    link.close()
    assert sink.lines(MAX_DEFERRED + 1)[-1] == "SIM:STAT idle,-1.0"
