"""A QUBO agent written from protocols/agent-protocol.md alone: plain pyzmq, msgpack and numpy,
no hilbench import. Tests use it to see what the orchestrator makes of an agent it does not run,
honest or not: in a thread of the test (``with SpecAgent(...) as agent``) or as a separate
process::

    python tests/spec_agent.py --bind tcp://127.0.0.1:0 [--seed-rule SEED:MODE:FACTOR ...]

which prints ``ENDPOINT tcp://…`` once bound. Per ``run`` it answers at once with the empty set
(feasible, cost 0), reporting an internal power of (10 + seed) W, unless a rule names the run's
seed:

``late``    it takes FACTOR × the timeout, answers a greedy independent set at 60 W, and says
            so honestly (a timed region of FACTOR × the timeout from the request's arrival);
``slow``    as ``late``, with the empty set at (10 + seed) W;
``forged``  it takes FACTOR × the timeout but claims a timed region of exactly the timeout,
            starting when the request arrived;
``lag``     it takes the timeout and FACTOR seconds more, claiming the timeout (as ``forged``);
``untimed`` as ``forged``, declaring the time past the timeout as ``untimed_s`` (its
            capabilities declare at most ``UNTIMED_MAX_S`` of untimed work per run).

It serves ``noop`` as the protocol says (the same body and payloads back): the orchestrator
echoes it to measure the link before a timed phase.

``power_w`` (``--power-w W``) replaces every internal power claim with ``W`` watts.

``pong_skew_s`` (``--pong-skew S``) forges each clock probe's answer: its ``t3`` (sent) is put
``S`` seconds before its ``t2`` (received), so the orchestrator, taking the agent's own
processing time off the round trip it saw, would count a round trip ``S`` longer and widen
the clock offset's uncertainty, which every timing check allows, by half of it.

``echo_delay_s`` (``--echo-delay S``) holds each ``noop`` echo ``S`` seconds before answering
it: the echoes the orchestrator measures the link with, and takes again after a late reply to
see how loaded the link is, come back that much slower than the link is.

``fault`` breaks the reply contract for the seeds in ``faulty_seeds`` (or, with
``faulty_above_nodes``, for every graph larger than that): ``("omit", field)`` leaves the field
out, ``("type", field, value)`` sends ``value`` in its place.
"""

from __future__ import annotations

import argparse
import os
import socket
import sys
import threading
import time
from typing import Any

import msgpack
import numpy as np
import zmq

PROTO = "hilbench-agent"
VERSION = 4  # the protocol version of protocols/agent-protocol.md
HEADER_KEYS = ("proto", "v", "type", "id", "cmd", "body", "payloads")
HEARTBEAT_S = 0.5
UNTIMED_MAX_S = 1e-3  # the per-run untimed work its capabilities declare


def header(kind: str, msg_id: str | None, body: dict | None, payloads: list | None = None
           ) -> bytes:
    values = (PROTO, VERSION, kind, msg_id, None, body, payloads or [])
    return msgpack.packb(dict(zip(HEADER_KEYS, values, strict=True)))


def greedy_set(matrix: np.ndarray) -> np.ndarray:
    """An independent set: take each node whose chosen neighbours are none (Q > 0 = an edge)."""
    chosen = np.zeros(matrix.shape[0], dtype=np.uint8)
    for node in range(matrix.shape[0]):
        if not np.any(chosen[matrix[node] > 0]):
            chosen[node] = 1
    return chosen


class SpecAgent:
    """A ROUTER socket on ``bind`` answering hello, ping, load, run and shutdown."""

    def __init__(self, fault: tuple | None = None, faulty_seeds: tuple[int, ...] = (1,),
                 port: int | None = None, faulty_above_nodes: int | None = None,
                 rules: dict[int, tuple[str, float]] | None = None,
                 bind: str = "tcp://127.0.0.1:0", power_w: float | None = None,
                 pong_skew_s: float = 0.0, echo_delay_s: float = 0.0) -> None:
        self.fault = fault
        self.faulty_seeds = faulty_seeds
        self.faulty_above_nodes = faulty_above_nodes
        self.rules = rules or {}
        self.power_w = power_w
        self.pong_skew_s = pong_skew_s
        self.echo_delay_s = echo_delay_s
        self.matrix = np.zeros((0, 0), dtype=np.int8)
        self._ctx = zmq.Context()
        self._sock = self._ctx.socket(zmq.ROUTER)
        self._sock.setsockopt(zmq.LINGER, 0)
        if port is not None:
            bind = f"tcp://127.0.0.1:{port}"
        self._sock.bind(bind[:-2] + ":*" if bind.endswith(":0") else bind)  # any free port
        self.address = self._sock.getsockopt_string(zmq.LAST_ENDPOINT)
        self.port = int(self.address.rsplit(":", 1)[1])
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self.serve, daemon=True)

    # -- in a thread ----------------------------------------------------------------------------

    def __enter__(self) -> SpecAgent:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(5)
        self.close()

    def close(self) -> None:
        self._sock.close(0)
        self._ctx.term()

    # -- serving --------------------------------------------------------------------------------

    def serve(self) -> None:
        """Answer until stopped or told to shut down; a heartbeat to every peer each 0.5 s."""
        peers: set[bytes] = set()
        next_beat = time.monotonic()
        while not self._stop.is_set():
            if self._sock.poll(50):
                frames = self._sock.recv_multipart()
                peers.add(frames[0])
                if not self._handle(frames[0], frames[1], frames[2:]):
                    return
            if time.monotonic() >= next_beat:
                for peer in peers:
                    self._sock.send_multipart([peer, header("heartbeat", None, None)])
                next_beat = time.monotonic() + HEARTBEAT_S

    def _send(self, peer: bytes, kind: str, cid: str | None, body: dict,
              arrays: list[bytes] | None = None, payloads: list | None = None) -> None:
        self._sock.send_multipart([peer, header(kind, cid, body, payloads), *(arrays or [])])

    def _handle(self, peer: bytes, raw: bytes, payloads: list[bytes]) -> bool:
        """Answer one message; False once told to shut down."""
        arrived = time.monotonic()
        msg: dict[str, Any] = msgpack.unpackb(raw)
        kind, cid, body = msg["type"], msg["id"], msg["body"] or {}
        if kind == "hello":
            self._send(peer, "welcome", cid, {
                "agent_id": "spec0", "driver": "spec", "protocol_version": VERSION,
                "capabilities": {"workloads": ["qubo"], "simulated": False,
                                 "qubo": {"solvers": ["sa", "anytime"],
                                          "modes": ["fixed_timeout"],
                                          "untimed": {"max_s": UNTIMED_MAX_S,
                                                      "reason": "building the reply"}}},
                "hilbench_version": "none", "host": socket.gethostname(), "pid": os.getpid(),
                "heartbeat_s": HEARTBEAT_S, "liveness": 6, "key_fingerprint": None})
        elif kind == "ping":
            sent = arrived - self.pong_skew_s if self.pong_skew_s else time.monotonic()
            self._send(peer, "pong", cid, {"t1": body["t1"], "t2": arrived, "t3": sent})
        elif kind == "request" and msg["cmd"] == "load":
            desc = msg["payloads"][0]
            self.matrix = np.frombuffer(payloads[0], dtype=desc["dtype"]).reshape(desc["shape"])
            self._send(peer, "reply", cid, {"nodes": int(self.matrix.shape[0])})
        elif kind == "request" and msg["cmd"] == "run":
            reply, state = self._run(body, arrived)
            self._send(peer, "reply", cid, reply, [state.tobytes()],
                       [{"dtype": "|u1", "shape": [len(state)]}])
        elif kind == "request" and msg["cmd"] == "noop":  # the same body and payloads back
            if self.echo_delay_s:
                time.sleep(self.echo_delay_s)
            self._send(peer, "reply", cid, body, payloads, msg["payloads"])
        elif kind == "request" and msg["cmd"] == "shutdown":
            self._send(peer, "reply", cid, {"shutdown": True})
            return False
        elif kind == "request":
            self._send(peer, "error", cid, {"code": "unknown_command",
                                            "message": f"no {msg['cmd']}", "detail": {}})
        return True  # heartbeats and anything else: a sign of life, nothing to answer

    def _run(self, body: dict, arrived: float) -> tuple[dict[str, Any], np.ndarray]:
        seed, timeout = int(body["seed"]), float(body["timeout_s"])
        mode, factor = self.rules.get(seed, ("honest", 1.0))
        nodes = self.matrix.shape[0]
        state = np.zeros(nodes, dtype=np.uint8)
        watts = 10.0 + seed
        if mode in ("late", "slow", "forged", "lag", "untimed"):
            if mode != "slow":
                state, watts = greedy_set(self.matrix), 60.0
            t_end = arrived + (timeout + factor if mode == "lag" else timeout * factor)
            # Asleep until 10 ms before, then awake, so the reply leaves close to t_end. What
            # it claims is t_end, as a device's own timer would: the time the host takes to
            # notice (a sleep that woke 6.1 ms late, a vCPU the host stopped for 10 ms while
            # it spun) is outside the claim, judged against the link's bound as any reply's.
            # Claiming the time it noticed made a 1.01x answer an overrun (CI-10: 0.105089 s
            # for 0.101 s; CI-14 again with the spin).
            time.sleep(max(0.0, t_end - 0.010 - time.monotonic()))
            while time.monotonic() < t_end:
                pass
        else:
            t_end = time.monotonic()
        untimed = max(0.0, t_end - arrived - timeout) if mode == "untimed" else None
        if mode in ("forged", "lag", "untimed"):
            t_end = arrived + timeout
        if self.power_w is not None:
            watts = self.power_w
        wide = state.astype(np.int64)
        reply: dict[str, Any] = {
            "cost": int(wide @ self.matrix.astype(np.int64) @ wide), "requested_s": timeout,
            "actual_s": t_end - arrived, "t_start": arrived, "t_end": t_end,
            "power": {"measured": True, "avg_power_w": watts, "source": "spec"}}
        if mode == "honest":  # the region holds its own work
            t_end = max(t_end, time.monotonic())
            reply.update(actual_s=t_end - arrived, t_end=t_end)
        if untimed is not None:
            reply["untimed_s"] = untimed
        above = self.faulty_above_nodes
        faulty = seed in self.faulty_seeds if above is None else nodes > above
        if self.fault and faulty:
            if self.fault[0] == "omit":
                reply.pop(self.fault[1])
            else:
                reply[self.fault[1]] = self.fault[2]
        return reply, state


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bind", default="tcp://127.0.0.1:0")
    parser.add_argument("--seed-rule", action="append", default=[], metavar="SEED:MODE:FACTOR")
    parser.add_argument("--power-w", type=float, default=None, metavar="W")
    parser.add_argument("--pong-skew", type=float, default=0.0, metavar="S",
                        help="forge each pong's t3 S seconds before its t2")
    parser.add_argument("--echo-delay", type=float, default=0.0, metavar="S",
                        help="hold each noop echo S seconds before answering it")
    args = parser.parse_args()
    rules = {}
    for text in args.seed_rule:
        seed, mode, factor = text.split(":")
        rules[int(seed)] = (mode, float(factor))
    agent = SpecAgent(rules=rules, bind=args.bind, power_w=args.power_w,
                      pong_skew_s=args.pong_skew, echo_delay_s=args.echo_delay)
    print("ENDPOINT", agent.address, flush=True)
    try:
        agent.serve()
    finally:
        agent.close()


if __name__ == "__main__":
    sys.exit(main())
