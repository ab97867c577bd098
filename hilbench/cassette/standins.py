"""Stand-ins fed from a cassette's channels: an agent on a real loopback ZeroMQ socket and a VISA
resource. Each answers a command with the reply recorded for the same command (type, ``cmd``
and body for an agent; the call and its arguments for an instrument), in recorded order per
command, so a DMM returns a new value to each ``READ?``. A command the cassette does not hold
fails the replay at once with :class:`ReplayMismatch`, naming it and the nearest recorded one.
"""

from __future__ import annotations

import contextlib
import difflib
import json
import logging
import threading
import time
from collections import defaultdict, deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import zmq

from hilbench.cassette.arrays import get_array, get_blob
from hilbench.wire import codec, keys
from hilbench.wire.codec import Message
from hilbench.wire.message_socket import MessageSocket

log = logging.getLogger(__name__)

# Correlated message types and the answer recorded for each.
ANSWERS = {codec.HELLO: (codec.WELCOME, codec.ERROR), codec.REQUEST: (codec.REPLY, codec.ERROR),
           codec.PING: (codec.PONG, codec.ERROR)}
# Body keys made afresh per session, and the versions an orchestrator offers: a newer one
# offers more, and replays a cassette if it speaks the version the recorded welcome chose (its
# client refuses the welcome otherwise, naming both).
VOLATILE = {codec.HELLO: ("session", "versions")}
REPLY_WAIT_S = 1.0  # a stand-in answers at once; no answer within this is a failure


class ReplayMismatch(RuntimeError):
    """The replayed orchestrator did something the cassette does not hold (or left out what it
    holds); the message says what and the nearest recorded interaction."""


@dataclass
class Failures:
    """What every stand-in of one replay found wrong; the first one stops the replay."""

    lines: list[str] = field(default_factory=list)
    first_at: float | None = None  # when the first was found (monotonic)
    raised: bool = False
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, line: str) -> None:
        """Note a failure (a stand-in's thread); the orchestrator's next call raises it."""
        with self._lock:
            self.lines.append(line)
            if self.first_at is None:
                self.first_at = time.monotonic()

    def fail(self, line: str) -> ReplayMismatch:
        """Note a failure that the caller raises now."""
        self.add(line)
        self.raised = True
        return ReplayMismatch(line)

    def check(self, link: str = "") -> None:
        """Raise the first failure; once it has stopped the campaign, what the orchestrator
        does on its way out (a shutdown request) meets a lost link instead."""
        if not self.lines:
            return
        if self.raised:
            from hilbench.orchestrator.client import AgentLost

            raise AgentLost(link or "stand-in", 0.0, "the replay, which stopped")
        self.raised = True
        raise ReplayMismatch(self.lines[0])


def canonical(value: Any) -> str:
    """One text per value, as the comparison sees it (NaN equals NaN, key order ignored)."""
    return json.dumps(value, sort_keys=True, default=str)


def nearest(wanted: str, recorded: list[str]) -> str:
    """The recorded command closest to ``wanted`` (difflib's ratio), and where they part."""
    if not recorded:
        return "the cassette holds none"
    best = max(recorded, key=lambda r: difflib.SequenceMatcher(None, wanted, r).ratio())
    at = next((i for i, (a, b) in enumerate(zip(wanted, best, strict=False)) if a != b),
              min(len(wanted), len(best)))
    if at < 60:
        return f"nearest recorded: {_short(best)}"
    return (f"nearest recorded: {_short(best)} (they part at character {at}: recorded "
            f"…{best[at - 20: at + 30]!r}, sent …{wanted[at - 20: at + 30]!r})")


def _short(text: str, limit: int = 300) -> str:
    return text if len(text) <= limit else text[:limit] + "…"


# --- agent ----------------------------------------------------------------------------------

@dataclass
class Exchange:
    key: str  # type, cmd and body as the comparison sees them
    arrays: list[str]  # sha256 of each array sent
    answer: dict[str, Any]  # the recorded answer line


def _message_key(type_: str, cmd: str | None, body: Any) -> str:
    body = dict(body or {})
    for name in VOLATILE.get(type_, ()):
        body.pop(name, None)
    return f"{type_} {cmd or ''} {canonical(body)}".replace("  ", " ")


def exchanges(lines: list[dict[str, Any]]) -> dict[str, deque[Exchange]]:
    """The recorded request/answer pairs of an agent channel, queued per (type, cmd)."""
    answers = {(m.get("type"), m.get("id")): m for m in lines if m.get("dir") == "in"}
    queues: dict[str, deque[Exchange]] = defaultdict(deque)
    for m in lines:
        if m.get("dir") != "out" or m.get("type") not in ANSWERS or m.get("again"):
            continue
        answer = next((answers[(t, m.get("id"))] for t in ANSWERS[m["type"]]
                       if (t, m.get("id")) in answers), None)
        if answer is None:
            continue  # never answered (the recording ended, or the agent was lost)
        queues[f"{m['type']} {m.get('cmd') or ''}"].append(Exchange(
            _message_key(m["type"], m.get("cmd"), m.get("body")),
            [a["sha256"] for a in m.get("arrays", [])], answer))
    return queues


class StandInAgent:
    """A ROUTER on loopback answering from one agent channel; a thread serves it."""

    def __init__(self, name: str, lines: list[dict[str, Any]], folder: Path,
                 failures: Failures, server_key: keys.KeyPair | None = None) -> None:
        self.name = name
        self.folder = folder
        self.failures = failures
        self.queues = exchanges(lines)
        self._ctx = zmq.Context.instance()
        self._sock = self._ctx.socket(zmq.ROUTER, socket_class=MessageSocket)
        self._sock.setsockopt(zmq.LINGER, 0)
        if server_key is not None:
            keys.make_server(self._sock, server_key)
        self._sock.bind("tcp://127.0.0.1:*")
        self.address = self._sock.getsockopt_string(zmq.LAST_ENDPOINT)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, name=f"stand-in {name}", daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        poller = zmq.Poller()
        poller.register(self._sock, zmq.POLLIN)
        while not self._stop.is_set():
            if not poller.poll(50):
                continue
            frames = self._sock.recv_message(routed=True)
            identity, frames = frames[0], frames[1:]
            try:
                msg = codec.decode(frames)
            except codec.ProtocolError as exc:
                self.failures.add(f"agent {self.name}: the orchestrator sent a bad message: {exc}")
                continue
            if msg.type not in ANSWERS:
                continue  # heartbeats: the orchestrator's side replays the agent's own
            try:
                frames = codec.encode(self.answer(msg))
            except Exception as exc:  # a recorded answer this hilbench cannot send again
                problem = (f"agent {self.name}: the recorded answer to {msg.type} "
                           f"{msg.cmd or ''} cannot be played back ({type(exc).__name__}: "
                           f"{_short(str(exc))})")
                self.failures.add(problem)
                frames = codec.encode(codec.error_message("replay_mismatch", problem, msg.id))
            self._sock.send_message([identity, *frames])
        self._sock.close(linger=0)

    def answer(self, msg: Message) -> Message:
        """The recorded answer to ``msg``, or an error naming what the cassette lacks."""
        kind = f"{msg.type} {msg.cmd or ''}"
        key = _message_key(msg.type, msg.cmd, msg.body)
        queue = self.queues.get(kind)
        sent = [_sha(a) for a in msg.arrays]
        if queue and queue[0].key == key and queue[0].arrays == sent:
            line = queue.popleft().answer
            arrays = [get_array(self.folder, ref) for ref in line.get("arrays", [])]
            return Message(type=line["type"], id=msg.id, cmd=line.get("cmd"),
                           body=line.get("body") or {}, arrays=arrays)
        if queue and queue[0].key == key:
            problem = (f"agent {self.name}: the orchestrator sent {_short(key)} with arrays "
                       f"{[s[:12] for s in sent]}; the cassette holds it with arrays "
                       f"{[s[:12] for s in queue[0].arrays]}")
        else:
            held = [e.key for q in self.queues.values() for e in q]
            what = "the cassette holds no more of it" if not queue else "not held next"
            problem = (f"agent {self.name}: unexpected command {_short(key)} ({what}); "
                       f"{nearest(key, held)}")
        self.failures.add(problem)
        return codec.error_message("replay_mismatch", problem, msg.id)

    def unused(self) -> list[str]:
        return [f"agent {self.name}: recorded {e.key} was never sent in the replay"
                for q in self.queues.values() for e in q]

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(5)


def _sha(array: np.ndarray) -> str:
    import hashlib

    return hashlib.sha256(np.ascontiguousarray(array).tobytes()).hexdigest()


class ReplaySocket:
    """The orchestrator's side of a replayed link: sends go to the stand-in over the real
    socket; each receive takes the next recorded outcome: a timed-out wait (no real wait: the
    virtual clock moved on), the agent's heartbeat, or the stand-in's answer over the socket
    (within :data:`REPLY_WAIT_S`, else the replay fails)."""

    def __init__(self, sock: Any, name: str, lines: list[dict[str, Any]],
                 failures: Failures) -> None:
        self._sock = sock
        self.name = name
        self.failures = failures
        self._out = deque(m for m in lines if m.get("dir") == "out")
        self._in = deque(m for m in lines if m.get("dir") == "in")
        self._sock.limit_receive_wait(round(REPLY_WAIT_S * 1000))

    def limit_receive_wait(self, ms: int) -> None:
        return None  # waits are virtual

    def send_message(self, frames: Any, flags: int = 0) -> None:
        self.failures.check(self.name)
        recorded = self._out.popleft() if self._out else None
        if recorded is not None and recorded.get("again"):
            raise zmq.Again()  # the recording found no connection up at this point
        self._sock.send_message(frames, flags)

    def recv_message(self) -> Any:
        self.failures.check(self.name)
        if not self._in:
            raise self.failures.fail(f"agent {self.name}: the orchestrator waits for a message "
                                    "after the last one recorded")
        line = self._in.popleft()
        if line.get("again"):
            raise zmq.Again()
        if line.get("type") == codec.HEARTBEAT:
            return codec.encode(Message(type=codec.HEARTBEAT, body=line.get("body") or {}))
        try:
            frames = self._sock.recv_message()
        except zmq.Again:
            self.failures.check(self.name)
            raise self.failures.fail(
                f"agent {self.name}: no answer from the stand-in within {REPLY_WAIT_S:g} s "
                f"where the cassette holds {line.get('type')} {line.get('cmd') or ''}") from None
        self.failures.check(self.name)
        return frames

    def close(self, *args: Any, **kwargs: Any) -> None:
        self._sock.close(*args, **kwargs)

    def unused(self) -> list[str]:
        left = [m for m in self._in if not m.get("again") and m.get("type") != codec.HEARTBEAT]
        return [f"agent {self.name}: recorded {m.get('type')} {m.get('cmd') or ''} was never "
                "received in the replay" for m in left]

    def __getattr__(self, name: str) -> Any:
        return getattr(self._sock, name)


# --- VISA -----------------------------------------------------------------------------------

def decode_value(folder: Path, value: Any) -> Any:
    """The inverse of :func:`hilbench.cassette.channels.encode_value`."""
    if isinstance(value, dict) and len(value) == 1:
        (kind, data), = value.items()
        if kind == "array":
            return get_array(folder, data)
        if kind == "list":
            return get_array(folder, data).tolist()
        if kind == "bytes":
            return bytes.fromhex(data)
        if kind == "bytes_sha256":
            return get_blob(folder, data)
        if kind == "text_sha256":
            return get_blob(folder, data).decode("utf-8")
    return value


def _arg_text(value: Any) -> str:
    """An argument as the comparison sees it: text as written, arrays and bytes by sha256."""
    if isinstance(value, str):
        return repr(value)
    if isinstance(value, np.ndarray):
        return f"array {value.dtype.str} {list(value.shape)} {_sha(value)[:16]}"
    if isinstance(value, (bytes, bytearray, memoryview)):
        data = bytes(value)
        if len(data) <= 64:
            return repr(data)
        return f"bytes[{len(data)}] {_sha(np.frombuffer(data, np.uint8))[:16]}"
    return canonical(value)


def _call_key(op: str, args: Any, kwargs: dict[str, Any] | None) -> str:
    text = " ".join([op, *(_arg_text(a) for a in args)])
    if kwargs:
        text += " " + " ".join(f"{k}={_arg_text(v)}" for k, v in sorted(kwargs.items()))
    return text


class StandInResource:
    """A pyvisa resource answering from one VISA channel: each data call takes the next result
    recorded for the same call and arguments; anything else fails the replay at once."""

    def __init__(self, resource: str, lines: list[dict[str, Any]], folder: Path,
                 failures: Failures) -> None:
        object.__setattr__(self, "resource_name", resource)
        object.__setattr__(self, "_folder", folder)
        object.__setattr__(self, "_failures", failures)
        queues: dict[str, deque[dict[str, Any]]] = defaultdict(deque)
        for line in lines:
            if line.get("op") and line["op"] != "close":
                args = [decode_value(folder, a) for a in line.get("args", [])]
                kwargs = {k: decode_value(folder, v) for k, v in (line.get("kwargs") or {}).items()}
                queues[_call_key(line["op"], args, kwargs)].append(line)
        object.__setattr__(self, "_queues", queues)
        object.__setattr__(self, "_attributes", {})

    def _call(self, op: str, *args: Any, **kwargs: Any) -> Any:
        self._failures.check()
        key = _call_key(op, args, kwargs)
        queue = self._queues.get(key)
        if not queue:
            held = [k for k, q in self._queues.items() if q]
            what = "the cassette holds no more of it" if key in self._queues else "not recorded"
            raise self._failures.fail(f"VISA {self.resource_name}: unexpected {_short(key)} "
                                     f"({what}); {nearest(key, held)}")
        line = queue.popleft()
        if "error" in line:
            raise _recorded_error(line)
        return decode_value(self._folder, line.get("result"))

    def __getattr__(self, name: str) -> Any:
        from hilbench.cassette.channels import VISA_CALLS

        if name in VISA_CALLS:
            return lambda *args, **kwargs: self._call(name, *args, **kwargs)
        if name.startswith("_"):
            raise AttributeError(name)
        if name in self._attributes:
            return self._attributes[name]
        return _Inert()

    def __setattr__(self, name: str, value: Any) -> None:
        self._attributes[name] = value

    def set_visa_attribute(self, *args: Any) -> None:
        return None

    def close(self) -> None:
        return None

    def unused(self) -> list[str]:
        return [f"VISA {self.resource_name}: recorded {_short(key)} was never called in the "
                f"replay ({len(q)} left)" for key, q in self._queues.items() if q]


class _Inert:
    """What a stand-in resource gives for a backend detail (a session table, a socket): any
    use does nothing, so a driver's best-effort tuning is a no-op."""

    def __getattr__(self, name: str) -> Any:
        return self

    def __getitem__(self, key: Any) -> Any:
        return self

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self


def _recorded_error(line: dict[str, Any]) -> BaseException:
    code = line.get("error_code")
    if code is not None:
        with contextlib.suppress(ImportError, Exception):
            from pyvisa.errors import VisaIOError

            return VisaIOError(code)
    if line.get("error") in ("OSError", "ConnectionError", "ConnectionResetError",
                             "BrokenPipeError", "TimeoutError"):
        return OSError(line.get("message", ""))
    if line.get("error") == "EOFError":
        return EOFError(line.get("message", ""))
    return RuntimeError(f"{line.get('error')}: {line.get('message')}")
