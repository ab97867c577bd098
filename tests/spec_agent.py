"""A QUBO agent written from protocols/agent-protocol.md alone: plain pyzmq and msgpack, no
hilbench import. Tests start it as a separate process to see what the orchestrator makes of an
agent it does not run, honest or not.

    python tests/spec_agent.py --bind tcp://127.0.0.1:0 [--seed-rule SEED:MODE:FACTOR ...]

It prints ``ENDPOINT tcp://…`` once bound. Per ``run`` it answers at once with an empty set
(cost 0), reporting an internal power of (10 + seed) W, unless a rule names the run's seed:

``late``    it takes FACTOR × the timeout, answers a greedy independent set at 60 W, and says
            so honestly (a timed region of FACTOR × the timeout from the request's arrival);
``slow``    as ``late``, with the empty set at (10 + seed) W;
``forged``  it takes FACTOR × the timeout but claims a timed region of exactly the timeout,
            starting when the request arrived.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import msgpack
import numpy as np
import zmq

PROTO = "hilbench-agent"
VERSION = 2  # the protocol version of protocols/agent-protocol.md


def header(kind: str, msg_id: str | None, body: dict, payloads: list | None = None) -> bytes:
    return msgpack.packb({"proto": PROTO, "v": VERSION, "type": kind, "id": msg_id, "cmd": None,
                          "body": body, "payloads": payloads or []})


def greedy_set(matrix: np.ndarray) -> np.ndarray:
    """An independent set: take each node whose chosen neighbours are none (Q > 0 = an edge)."""
    chosen = np.zeros(matrix.shape[0], dtype=np.uint8)
    for node in range(matrix.shape[0]):
        if not np.any(chosen[matrix[node] > 0]):
            chosen[node] = 1
    return chosen


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--bind", default="tcp://127.0.0.1:0")
    parser.add_argument("--seed-rule", action="append", default=[])
    args = parser.parse_args()
    rules = {}
    for text in args.seed_rule:
        seed, mode, factor = text.split(":")
        rules[int(seed)] = (mode, float(factor))
    sock = zmq.Context.instance().socket(zmq.ROUTER)
    sock.bind(args.bind.replace(":0", ":*"))
    print("ENDPOINT", sock.getsockopt_string(zmq.LAST_ENDPOINT), flush=True)
    matrix = np.zeros((0, 0), dtype=np.int8)
    while True:
        frames = sock.recv_multipart()
        peer, head, payloads = frames[0], msgpack.unpackb(frames[1]), frames[2:]
        kind, msg_id, body = head["type"], head["id"], head["body"] or {}
        arrived = time.monotonic()
        if kind == "hello":
            sock.send_multipart([peer, header("welcome", msg_id, {
                "agent_id": "spec", "driver": "spec", "protocol_version": VERSION,
                "capabilities": {"workloads": ["qubo"], "simulated": False,
                                 "qubo": {"solvers": ["sa"], "modes": ["fixed_timeout"]}},
                "hilbench_version": "none", "host": "localhost", "pid": os.getpid(),
                "heartbeat_s": 0.5, "liveness": 6, "key_fingerprint": None})])
        elif kind == "ping":
            sock.send_multipart([peer, header("pong", msg_id, {
                "t1": body["t1"], "t2": arrived, "t3": time.monotonic()})])
        elif kind == "request" and head["cmd"] == "load":
            desc = head["payloads"][0]
            matrix = np.frombuffer(payloads[0], dtype=desc["dtype"]).reshape(desc["shape"])
            sock.send_multipart([peer, header("reply", msg_id, {"nodes": matrix.shape[0]})])
        elif kind == "request" and head["cmd"] == "run":
            seed, timeout = int(body["seed"]), float(body["timeout_s"])
            mode, factor = rules.get(seed, ("honest", 1.0))
            state = np.zeros(matrix.shape[0], dtype=np.uint8)
            watts = 10.0 + seed
            t_start = t_end = arrived
            if mode in ("late", "slow", "forged"):
                if mode != "slow":
                    state, watts = greedy_set(matrix), 60.0
                t_end = arrived + timeout * factor
                time.sleep(max(0.0, t_end - time.monotonic()))
            else:
                t_end = time.monotonic()
            if mode == "forged":
                t_end = arrived + timeout
            cost = int(state.astype(np.int64) @ matrix.astype(np.int64) @ state.astype(np.int64))
            reply = {"cost": cost, "requested_s": timeout, "actual_s": t_end - t_start,
                     "t_start": t_start, "t_end": t_end,
                     "power": {"measured": True, "avg_power_w": watts, "source": "spec"}}
            sock.send_multipart([peer, header("reply", msg_id, reply,
                                              [{"dtype": "|u1", "shape": [len(state)]}]),
                                 state.tobytes()])
        elif kind == "request" and head["cmd"] == "shutdown":
            sock.send_multipart([peer, header("reply", msg_id, {"shutdown": True})])
            return
        elif kind == "request":
            sock.send_multipart([peer, header("error", msg_id, {
                "code": "unknown_command", "message": f"no {head['cmd']}", "detail": {}})])
        # heartbeats and anything else: a sign of life, nothing to answer


if __name__ == "__main__":
    sys.exit(main())
