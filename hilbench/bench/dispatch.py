"""`hilbench bench dispatch`: round-trip cost of one protocol request, next to bare pyzmq.

Both servers run as separate processes on loopback and are measured in the same run with the
same payload, taking turns in blocks so that a busy machine weighs on both alike: an agent
answering `echo` (full protocol: header codec, validation, heartbeats, correlation ids) and a
bare REQ/REP echo. The ratio on the last line is the protocol's overhead factor.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time

import click
import numpy as np
import zmq

from hilbench.orchestrator.campaign import AgentSpec
from hilbench.orchestrator.client import AgentClient
from hilbench.orchestrator.spawn import spawn_agent

_BARE_SERVER = """
import sys, zmq
ctx = zmq.Context()
s = ctx.socket(zmq.REP)
port = s.bind_to_random_port("tcp://127.0.0.1")
print(port, flush=True)
while True:
    msg = s.recv(copy=False)
    if len(msg) == 0:
        s.send(b"")
        break
    s.send(msg, copy=False)
"""


def _percentiles(samples_ns: list[int]) -> tuple[float, float]:
    arr = np.asarray(samples_ns, dtype=np.float64) / 1e3
    return float(np.median(arr)), float(np.percentile(arr, 99))


BLOCK = 100  # round trips per turn; the two paths take turns so both see the same machine


def _interleaved_round_trips(
    payload: np.ndarray, n: int, warmup: int
) -> tuple[list[int], list[int]]:
    """Round-trip times (ns) of a bare REQ/REP echo and of the agent protocol's ``echo``,
    taking turns in blocks so that load on a shared machine affects both alike."""
    bare_server = subprocess.Popen(
        [sys.executable, "-c", _BARE_SERVER], stdout=subprocess.PIPE, text=True
    )
    agent = spawn_agent(AgentSpec(id="bench", driver="cpu", spawn=True))
    sock = zmq.Context.instance().socket(zmq.REQ)
    sock.setsockopt(zmq.LINGER, 0)
    try:
        sock.connect(f"tcp://127.0.0.1:{int(bare_server.stdout.readline())}")
        with AgentClient(agent.address, "bench") as client:

            def bare_once() -> int:
                t0 = time.perf_counter_ns()
                sock.send(payload, copy=False)
                sock.recv(copy=False)
                return time.perf_counter_ns() - t0

            def protocol_once() -> int:
                t0 = time.perf_counter_ns()
                reply = client.request("echo", {}, [payload])
                elapsed = time.perf_counter_ns() - t0
                assert reply.arrays[0].nbytes == payload.nbytes
                return elapsed

            for _ in range(warmup):
                bare_once()
                protocol_once()
            bare: list[int] = []
            proto: list[int] = []
            while len(bare) < n:
                bare += [bare_once() for _ in range(min(BLOCK, n - len(bare)))]
                proto += [protocol_once() for _ in range(min(BLOCK, n - len(proto)))]
            client.request("shutdown", timeout_s=5)
        sock.send(b"")
        sock.recv()
        return bare, proto
    finally:
        sock.close()
        agent.stop()
        bare_server.wait(timeout=5)


@click.command()
@click.option("--requests", "n", default=3000, show_default=True, help="Timed round trips (≥2000).")
@click.option("--payload-kib", default=64, show_default=True, help="Payload size in KiB.")
@click.option("--warmup", default=200, show_default=True, help="Untimed round trips first.")
def dispatch(n: int, payload_kib: int, warmup: int) -> None:
    """Round trip of one request with a payload: agent protocol vs bare pyzmq REQ/REP."""
    if n < 2000:
        raise click.BadParameter(
            "use at least 2000 requests for a stable p99", param_hint="--requests"
        )
    payload = np.random.default_rng(0).integers(0, 255, payload_kib * 1024, dtype=np.uint8)
    bare, proto = _interleaved_round_trips(payload, n, warmup)
    bare_med, bare_p99 = _percentiles(bare)
    proto_med, proto_p99 = _percentiles(proto)
    click.echo(
        f"payload {payload_kib} KiB, {n} timed round trips each, loopback TCP, "
        f"the two paths taking turns in blocks of {BLOCK}"
    )
    click.echo(f"bare pyzmq REQ/REP   median {bare_med:8.1f} us   p99 {bare_p99:8.1f} us")
    click.echo(f"hilbench protocol    median {proto_med:8.1f} us   p99 {proto_p99:8.1f} us")
    click.echo(
        f"mean overhead {statistics.fmean(proto) / 1e3 - statistics.fmean(bare) / 1e3:.1f} us"
    )
    click.echo(f"ratio (protocol/bare, median) {proto_med / bare_med:.2f}")
