"""`hilbench bench dispatch`: round trip of one device command through an agent, next to bare pyzmq.

Both servers run as separate processes on loopback and are measured in the same run, taking
turns in blocks so that a busy machine weighs on both alike:

* bare: a pyzmq REQ/REP echo, the least any ZeroMQ round trip costs;
* framed: a pyzmq DEALER/ROUTER echo of the frames the protocol sends (an encoded ``noop``
  header and the payload), no hilbench code on either side: what the protocol's message shape
  costs by itself, so the gap between it and the worker path is hilbench's own work;
* worker: the agent protocol's ``noop``, a device command that goes the way ``run`` goes (header
  codec and checks, hello-first state, busy rule, memory budget, the driver (worker) thread that
  runs device commands, heartbeats and correlation ids) without touching a device;
* inline: the protocol's ``echo``, answered by whichever thread serves the socket (for reference).

Each payload size is measured in turn (default 1 KiB and 64 KiB; 0 works too). The last line is
the headline: the worker path's median ratio to bare pyzmq at each size.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

import click
import numpy as np
import zmq

from hilbench.lifeline import start_child
from hilbench.orchestrator.campaign import AgentSpec
from hilbench.orchestrator.client import AgentClient
from hilbench.orchestrator.spawn import spawn_agent
from hilbench.wire import codec
from hilbench.wire.codec import Message


def _echo_server_code(kind: str, echo: str) -> str:
    """A pyzmq echo server's script: a ``kind`` socket on a free loopback port (printed first)
    that sends back whatever it receives, with ``echo`` (a statement on its socket ``s``)."""
    return (
        "import zmq\n"
        "ctx = zmq.Context()\n"
        f"s = ctx.socket(zmq.{kind})\n"
        'print(s.bind_to_random_port("tcp://127.0.0.1"), flush=True)\n'
        "while True:\n"
        f"    {echo}\n"
    )


_BARE_SERVER = _echo_server_code("REP", "s.send(s.recv(copy=False), copy=False)")
_FRAMED_SERVER = _echo_server_code(
    "ROUTER", "s.send_multipart(s.recv_multipart(copy=False), copy=False)"
)

BLOCK = 100  # round trips per turn; the paths take turns so all see the same machine
PATHS = ("bare", "framed", "worker", "inline")


def _percentiles(samples_ns: list[int]) -> tuple[float, float]:
    arr = np.asarray(samples_ns, dtype=np.float64) / 1e3
    return float(np.median(arr)), float(np.percentile(arr, 99))


def _timed(call: Callable[[], object]) -> int:
    t0 = time.perf_counter_ns()
    call()
    return time.perf_counter_ns() - t0


def _start_echo_server(code: str) -> tuple[subprocess.Popen, str]:
    """A pyzmq echo server in its own process (dies with this one) and its address."""
    server = start_child(
        [sys.executable, "-c", code], stdout=subprocess.PIPE, text=True
    )
    assert server.stdout is not None
    return server, f"tcp://127.0.0.1:{int(server.stdout.readline())}"


def _take_turns(calls: dict[str, Any], n: int, warmup: int) -> dict[str, list[int]]:
    """``n`` timed calls per path after ``warmup`` untimed ones, the paths taking turns in
    blocks so that a slow spell of the machine falls on all of them."""
    for _ in range(warmup):
        for call in calls.values():
            call()
    times: dict[str, list[int]] = {path: [] for path in PATHS}
    while len(times["bare"]) < n:
        size = min(BLOCK, n - len(times["bare"]))
        for path in PATHS:
            times[path] += [_timed(calls[path]) for _ in range(size)]
    return times


def measure(payload_kib: tuple[int, ...], n: int, warmup: int) -> dict[int, dict[str, list[int]]]:
    """Round-trip times (ns) per payload size and path, the paths taking turns in blocks."""
    servers: list[subprocess.Popen] = []
    sockets: list[zmq.Socket] = []
    agent = None
    results: dict[int, dict[str, list[int]]] = {}
    try:
        context = zmq.Context.instance()
        for code, kind in ((_BARE_SERVER, zmq.REQ), (_FRAMED_SERVER, zmq.DEALER)):
            server, address = _start_echo_server(code)
            servers.append(server)
            sock = context.socket(kind)
            sock.setsockopt(zmq.LINGER, 0)
            sock.connect(address)
            sockets.append(sock)
        req, dealer = sockets
        # Unkeyed, like the bare rows it is compared with: the protocol path without CurveZMQ.
        agent = spawn_agent(AgentSpec(id="bench", driver="cpu", spawn=True), keyed=False)
        with AgentClient(agent.address, "bench") as client:
            for kib in payload_kib:
                payload = np.random.default_rng(kib).integers(0, 255, kib * 1024, dtype=np.uint8)
                header = codec.encode(Message(type=codec.REQUEST, id="bench-1", cmd="noop",
                                              arrays=[payload]))[0]

                def bare(payload: np.ndarray = payload) -> None:
                    req.send(payload, copy=False)
                    req.recv(copy=False)

                def framed(payload: np.ndarray = payload, header: bytes = header) -> None:
                    dealer.send_multipart([header, payload], copy=False)
                    dealer.recv_multipart(copy=False)

                def worker(payload: np.ndarray = payload) -> None:
                    reply = client.request("noop", {}, [payload])
                    assert reply.arrays[0].nbytes == payload.nbytes

                def inline(payload: np.ndarray = payload) -> None:
                    reply = client.request("echo", {}, [payload])
                    assert reply.arrays[0].nbytes == payload.nbytes

                calls = {"bare": bare, "framed": framed, "worker": worker, "inline": inline}
                results[kib] = _take_turns(calls, n, warmup)
            client.request("shutdown", timeout_s=5)
        return results
    finally:
        for sock in sockets:
            sock.close()
        if agent is not None:
            agent.stop()
        for server in servers:
            server.kill()
            server.wait(timeout=5)


@click.command()
@click.option(
    "--requests",
    "n",
    default=3000,
    show_default=True,
    help="Timed round trips per path and size (≥2000).",
)
@click.option(
    "--payload-kib",
    multiple=True,
    type=click.IntRange(min=0),
    default=(1, 64),
    show_default=True,
    help="Payload size in KiB; repeat for several sizes (0: no payload frame content).",
)
@click.option("--warmup", default=200, show_default=True, help="Untimed round trips first.")
def dispatch(n: int, payload_kib: tuple[int, ...], warmup: int) -> None:
    """Round trip of a device command through the agent's worker vs bare pyzmq REQ/REP.

    Targets (issue 10): the worker path (`noop`, run by the agent's driver thread like `run`)
    within 2× bare pyzmq at 1 KiB and 1.5× at 64 KiB, median against median in this one run.
    The paths take turns in blocks so the machine's load weighs on all alike, but the load
    still moves the ratios: the first line prints the load average. Waking a process is most of
    a round trip on an idle machine; when other work keeps the cores from idling, wake-ups get
    cheap, bare REQ/REP can run 3× faster and every other path's fixed cost weighs more. The
    DEALER/ROUTER row (the protocol's frames with no hilbench code) shows what the message shape
    costs by itself on this machine, now: the worker path's distance from it is hilbench's own.
    """
    if n < 2000:
        raise click.BadParameter(
            "use at least 2000 requests for a stable p99", param_hint="--requests"
        )
    results = measure(tuple(payload_kib), n, warmup)
    load = os.getloadavg()[0]
    click.echo(
        f"{n} timed round trips per path and size, loopback TCP, the paths taking turns in "
        f"blocks of {BLOCK}; load average {load:.2f} on {os.cpu_count()} CPUs"
    )
    click.echo(f"{'payload':>8} {'path':<38} {'median us':>10} {'p99 us':>10} {'ratio':>6}")
    labels = {
        "bare": "bare pyzmq REQ/REP",
        "framed": "bare pyzmq DEALER/ROUTER, same frames",
        "worker": "hilbench noop (worker thread)",
        "inline": "hilbench echo (answered inline)",
    }
    headline = []
    for kib, times in results.items():
        bare_med = _percentiles(times["bare"])[0]
        for path in PATHS:
            med, p99 = _percentiles(times[path])
            click.echo(
                f"{kib:>5} KiB {labels[path]:<38} {med:>10.1f} {p99:>10.1f} {med / bare_med:>6.2f}"
            )
        headline.append(f"{kib} KiB {_percentiles(times['worker'])[0] / bare_med:.2f}")
    click.echo("worker/bare median ratio: " + ", ".join(headline))
