"""A real agent process under hostile peers: its memory stays within the budget and a
well-behaved client is served within 1 s throughout (issue 24)."""

from __future__ import annotations

import contextlib
import resource
import selectors
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import zmq

from hilbench.lifeline import stop_process_group
from hilbench.orchestrator.client import AgentClient
from hilbench.wire import codec
from hilbench.wire.codec import Message
from tests.agent import zmtp_raw

PROTO_V = codec.PROTOCOL_VERSION  # the protocol version these messages speak

MiB = 1 << 20
BUDGET_MIB = 512
RSS_LIMIT = (BUDGET_MIB + 64) * MiB

pytestmark = pytest.mark.slow


@contextlib.contextmanager
def agent_process(*extra: str, fd_limit: int | None = None):
    """``hilbench agent --driver cpu`` on loopback; yields (process, endpoint)."""

    def _limit() -> None:
        if fd_limit is not None:
            resource.setrlimit(resource.RLIMIT_NOFILE, (fd_limit, fd_limit))

    cmd = [sys.executable, "-m", "hilbench", "agent", "--driver", "cpu", "--bind",
           "tcp://127.0.0.1:*", "--memory-budget-mib", str(BUDGET_MIB), "--announce", *extra]
    with tempfile.TemporaryFile("w+") as log:  # its drops and their held bytes, for a failure
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=log, text=True,
                                preexec_fn=_limit, start_new_session=True)
        proc.log = log
        try:
            sel = selectors.DefaultSelector()
            sel.register(proc.stdout, selectors.EVENT_READ)
            assert sel.select(60), "agent did not start"
            line = proc.stdout.readline()
            assert line.startswith("READY "), line
            yield proc, line.split()[1]
        finally:
            stop_process_group(proc, timeout_s=5)


def assert_within_budget(proc: subprocess.Popen, rises: list[tuple[float, int]]) -> None:
    """The agent's peak RSS below RSS_LIMIT; past it, the failure shows when the memory rose and
    what the agent dropped (CI-48 once saw 751 MiB where runs here peak at 443-520 MiB)."""
    peak = peak_rss(proc)
    if peak < RSS_LIMIT:
        return
    proc.log.seek(0)
    lines = proc.log.read().splitlines()
    steps = ", ".join(f"{t * 1e3:.0f} ms {rss / MiB:.0f} MiB" for t, rss in rises[-40:])
    raise AssertionError(f"agent peak RSS {peak / MiB:.0f} MiB >= {RSS_LIMIT / MiB:.0f} MiB; "
                         f"RSS rises: {steps}; its log's last lines:\n" + "\n".join(lines[-30:]))


@contextlib.contextmanager
def rss_rises(proc: subprocess.Popen, step: int = 32 * MiB) -> Iterator[list[tuple[float, int]]]:
    """The agent's RSS every millisecond while the block runs, kept where it moved by ``step``."""
    rises: list[tuple[float, int]] = []
    done = threading.Event()

    def sample() -> None:
        start, last = time.monotonic(), 0
        with contextlib.suppress(OSError, ValueError):
            while not done.is_set():
                with open(f"/proc/{proc.pid}/statm") as f:
                    rss = int(f.read().split()[1]) * resource.getpagesize()
                if abs(rss - last) >= step:
                    rises.append((time.monotonic() - start, rss))
                    last = rss
                time.sleep(0.001)

    thread = threading.Thread(target=sample, daemon=True)
    thread.start()
    try:
        yield rises
    finally:
        done.set()
        thread.join(5)


def peak_rss(proc: subprocess.Popen) -> int:
    """The process's peak resident memory so far (VmHWM)."""
    with open(f"/proc/{proc.pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    raise AssertionError("no VmHWM")


class WellBehaved(threading.Thread):
    """Asks status and echoes 1 MiB in a loop; records the slowest answer and any failure."""

    def __init__(self, endpoint: str) -> None:
        super().__init__(daemon=True)
        self.endpoint = endpoint
        self.slowest = 0.0
        self.served = 0
        self.failure: BaseException | None = None
        self.done = threading.Event()
        self.started = time.monotonic()
        self.attack_window: tuple[float, float] | None = None  # set by _attack
        self.slow: list[str] = []  # answers past 0.25 s: which, and when

    def run(self) -> None:
        payload = np.arange(MiB, dtype=np.uint8)
        try:
            with AgentClient(self.endpoint, "well-behaved") as client:
                while not self.done.is_set():
                    for cmd, arrays in (("status", None), ("echo", [payload])):
                        t0 = time.monotonic()
                        client.request(cmd, {}, arrays, timeout_s=5)
                        took = time.monotonic() - t0
                        self.slowest = max(self.slowest, took)
                        if took > 0.25:
                            self.slow.append(f"{cmd} #{self.served} asked at "
                                             f"{t0 - self.started:.2f} s took {took:.2f} s")
                        self.served += 1
                    time.sleep(0.02)
        except BaseException as exc:  # reported by finish()
            self.failure = exc

    def finish(self) -> None:
        self.done.set()
        self.join(10)
        assert self.failure is None, f"the well-behaved client failed: {self.failure!r}"
        assert self.served > 4
        window = ("" if self.attack_window is None else
                  " (attack from {:.2f} s to {:.2f} s)".format(*self.attack_window))
        assert self.slowest < 1.0, (f"slowest answer {self.slowest:.2f} s of {self.served}"
                                    f"{window}; answers past 0.25 s: {self.slow}")


def _attack(endpoint: str, attack, *args):
    client = WellBehaved(endpoint)
    client.start()
    time.sleep(0.3)
    began = time.monotonic() - client.started
    try:
        return attack(endpoint, *args)
    finally:
        client.attack_window = (began, time.monotonic() - client.started)
        time.sleep(0.3)
        client.finish()
        print(f"well-behaved client: {client.served} answers, slowest {client.slowest:.3f} s")


ROOT = Path(__file__).resolve().parents[2]


def _from_another_process(endpoint: str, attack, *args) -> None:
    """Run ``attack`` (a module-level function here) in a process of its own, as a hostile peer
    runs. Beside the timed client in this process, its sending threads took the GIL the client
    needs: CI-86 saw one echo answered 2.20 s late as 16 senders started."""
    code = (f"from tests.agent.test_hostile import {attack.__name__} as attack; "
            f"attack({endpoint!r}, *{args!r})")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                          timeout=150)
    assert done.returncode == 0, done.stderr[-2000:]


def _half_sent(endpoint: str, connections: int, announced: int, sent: int) -> None:
    host, port = zmtp_raw.address(endpoint)
    socks = [zmtp_raw.connect(host, port) for _ in range(connections)]
    threads = [threading.Thread(target=zmtp_raw.half_send, args=(s, announced, sent))
               for s in socks]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    time.sleep(0.5)
    for s in socks:
        s.close()


@pytest.mark.serial  # its answers are held to 1 s: beside a third worker they took 1.02 s
def test_half_sent_200_mb_frames_on_16_connections():
    with agent_process() as (proc, endpoint), rss_rises(proc) as rises:
        _attack(endpoint, _from_another_process, _half_sent, 16, 200_000_000, 100_000_000)
        print(f"16 x half-sent 200 MB: agent peak RSS {peak_rss(proc) / MiB:.0f} MiB")
        assert_within_budget(proc, rises)


def _whole_messages(endpoint: str, connections: int, size: int) -> None:
    ctx = zmq.Context()
    payload = np.ones(size, np.uint8)
    socks = []
    for _ in range(connections):
        sock = ctx.socket(zmq.DEALER)
        sock.linger = 0
        sock.connect(endpoint)
        sock.send_multipart(codec.encode(Message(type="hello", id="h",
                                                 body={"versions": [PROTO_V]})))
        socks.append(sock)
    time.sleep(0.2)
    for i, sock in enumerate(socks):
        msg = Message(type=codec.REQUEST, id=f"big{i}", cmd="echo", arrays=[payload])
        sock.send_multipart(codec.encode(msg), copy=False)
    time.sleep(3)
    for sock in socks:
        sock.close()
    ctx.term()


@pytest.mark.serial  # held to 1 s like the test above: beside two workers it took 1.40 s (CI)
def test_20_connections_of_50_mb_messages():
    with agent_process() as (proc, endpoint), rss_rises(proc) as rises:
        _attack(endpoint, _from_another_process, _whole_messages, 20, 50_000_000)
        print(f"20 x 50 MB: agent peak RSS {peak_rss(proc) / MiB:.0f} MiB")
        assert_within_budget(proc, rises)


def _never_reads(endpoint: str, size: int) -> None:
    ctx = zmq.Context()
    sock = ctx.socket(zmq.DEALER)
    sock.linger = 0
    sock.rcvhwm = 1
    sock.setsockopt(zmq.RCVBUF, 4096)
    sock.connect(endpoint)
    sock.send_multipart(codec.encode(Message(type="hello", id="h", body={"versions": [PROTO_V]})))
    payload = np.ones(size, np.uint8)
    for i in range(12):  # echoes whose replies it never reads
        msg = Message(type=codec.REQUEST, id=f"hog{i}", cmd="echo", arrays=[payload])
        sock.send_multipart(codec.encode(msg), copy=False)
        time.sleep(0.1)
    time.sleep(1)
    return sock, ctx


def test_a_peer_that_never_reads_its_replies():
    with agent_process("--unread-reply-s", "2") as (proc, endpoint), rss_rises(proc) as rises:
        sock, ctx = _attack(endpoint, _never_reads, 64 * MiB)
        try:
            with AgentClient(endpoint) as client:
                deadline = time.monotonic() + 5
                while client.request("status").body["in_flight_bytes"]:
                    assert time.monotonic() < deadline, "the unread replies are still held"
                    time.sleep(0.1)
        finally:
            sock.close()
            ctx.term()
        print(f"a peer that never reads 64 MiB echoes: agent peak RSS "
              f"{peak_rss(proc) / MiB:.0f} MiB")
        assert_within_budget(proc, rises)


def _idle_connections(endpoint: str, count: int) -> dict:
    host, port = zmtp_raw.address(endpoint)
    socks = []
    try:
        for _ in range(count):  # through the handshake: ZeroMQ then keeps them for ever
            socks.append(zmtp_raw.connect(host, port))
        with AgentClient(endpoint) as client:
            deadline = time.monotonic() + 10
            while True:  # until the agent has accepted them all (the listen backlog drains)
                status = client.request("status").body
                # At most the one just accepted past the cap, for the moment the guard drops one.
                assert status["connections"] <= status["max_connections"] + 1
                if status["accepted_connections"] >= count:
                    break
                assert time.monotonic() < deadline, status
                time.sleep(0.1)
            settle = time.monotonic() + 2  # the guard drops the one past the cap within a look
            while status["connections"] > status["max_connections"]:
                assert time.monotonic() < settle, status
                time.sleep(0.05)
                status = client.request("status").body
            return status
    finally:
        for s in socks:
            s.close()


def test_1100_idle_connections_past_a_1024_descriptor_limit():
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = 2048  # the 1100 connections live in this process too
    try:  # root (as in CI) may raise the hard limit as well
        resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, want), max(hard, want)))
    except (ValueError, OSError):
        pytest.skip(f"needs {want} descriptors for the test process (hard limit {hard})")
    try:
        with agent_process(fd_limit=1024) as (proc, endpoint), rss_rises(proc) as rises:
            status = _attack(endpoint, _idle_connections, 1100)
            print(f"1100 idle connections: {status['dropped_connections']} dropped, "
                  f"{status['connections']} kept (limit {status['max_connections']}), "
                  f"peak RSS {peak_rss(proc) / MiB:.0f} MiB")
            assert status["connections"] <= status["max_connections"] < 1024
            assert status["dropped_connections"] >= 1100 - status["max_connections"]
            assert_within_budget(proc, rises)
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
