"""A QUBO agent written from protocols/agent-protocol.md alone: plain pyzmq and msgpack, no
hilbench import. It answers every run with the empty set (feasible, cost 0), and breaks the
reply contract the way ``fault`` says for the seeds in ``faulty_seeds``."""

from __future__ import annotations

import os
import socket
import threading
import time
from typing import Any

import msgpack
import zmq

HEADER_KEYS = ("proto", "v", "type", "id", "cmd", "body", "payloads")


def _header(kind: str, cid: str | None, body: dict | None, payloads: list | None = None) -> bytes:
    values = ("hilbench-agent", 2, kind, cid, None, body, payloads or [])
    return msgpack.packb(dict(zip(HEADER_KEYS, values, strict=True)))


class SpecAgent:
    """ROUTER on loopback; ``fault``: ``("omit", field)`` or ``("type", field, value)``."""

    def __init__(self, fault: tuple | None = None, faulty_seeds: tuple[int, ...] = (1,),
                 port: int | None = None, faulty_above_nodes: int | None = None) -> None:
        self.fault = fault
        self.faulty_seeds = faulty_seeds
        self.faulty_above_nodes = faulty_above_nodes
        self.nodes = 0
        self._ctx = zmq.Context()
        self._sock = self._ctx.socket(zmq.ROUTER)
        self._sock.setsockopt(zmq.LINGER, 0)
        if port is None:
            port = self._sock.bind_to_random_port("tcp://127.0.0.1")
        else:
            self._sock.bind(f"tcp://127.0.0.1:{port}")
        self.port = port
        self.address = f"tcp://127.0.0.1:{port}"
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)

    def __enter__(self) -> SpecAgent:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(5)
        self._sock.close(0)
        self._ctx.term()

    def _serve(self) -> None:
        peers: set[bytes] = set()
        next_beat = time.monotonic()
        while not self._stop.is_set():
            if self._sock.poll(50):
                frames = self._sock.recv_multipart()
                peers.add(frames[0])
                self._handle(frames[0], frames[1], frames[2:])
            if time.monotonic() >= next_beat:
                for peer in peers:
                    self._sock.send_multipart([peer, _header("heartbeat", None, None)])
                next_beat = time.monotonic() + 0.5

    def _send(self, peer: bytes, kind: str, cid: str, body: dict, arrays: list[bytes] = (),
              payloads: list | None = None) -> None:
        self._sock.send_multipart([peer, _header(kind, cid, body, payloads), *arrays])

    def _handle(self, peer: bytes, raw: bytes, arrays: list[bytes]) -> None:
        msg: dict[str, Any] = msgpack.unpackb(raw)
        kind, cid, body = msg["type"], msg["id"], msg["body"] or {}
        if kind == "hello":
            self._send(peer, "welcome", cid, {
                "agent_id": "spec0", "driver": "spec", "protocol_version": 2,
                "capabilities": {"workloads": ["qubo"], "qubo": {"solvers": ["anytime"]}},
                "hilbench_version": "none", "host": socket.gethostname(), "pid": os.getpid(),
                "heartbeat_s": 0.5, "liveness": 6, "key_fingerprint": None})
        elif kind == "ping":
            t2 = time.monotonic()
            self._send(peer, "pong", cid, {"t1": body["t1"], "t2": t2, "t3": time.monotonic()})
        elif kind == "request" and msg["cmd"] == "load":
            self.nodes = int(body["nodes"])
            self._send(peer, "reply", cid, {"nodes": self.nodes})
        elif kind == "request" and msg["cmd"] == "run":
            t_start = time.monotonic()
            reply: dict[str, Any] = {"cost": 0, "requested_s": body["timeout_s"],
                                     "actual_s": 0.0, "t_start": t_start, "t_end": t_start}
            above = self.faulty_above_nodes
            faulty = body["seed"] in self.faulty_seeds if above is None else self.nodes > above
            if self.fault and faulty:
                if self.fault[0] == "omit":
                    reply.pop(self.fault[1])
                else:
                    reply[self.fault[1]] = self.fault[2]
            state = bytes(self.nodes)  # the empty set: feasible, cost 0
            self._send(peer, "reply", cid, reply, [state],
                       [{"dtype": "|u1", "shape": [self.nodes]}])
        elif kind == "request":
            self._send(peer, "error", cid, {"code": "unknown_command", "message": msg["cmd"],
                                            "detail": {}})
