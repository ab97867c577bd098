"""The orchestrator's side of one agent link: handshake, requests, heartbeats, clock offsets.

The link is a DEALER socket connected to an agent's ROUTER. While waiting for a reply it sends
heartbeats and counts the agent's; when nothing has been heard for ``liveness`` heartbeat
intervals, the agent is declared lost (Paranoid Pirate), and the error names the agent.
"""

from __future__ import annotations

import logging
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import zmq

from hilbench.clock import now
from hilbench.contracts.base import ContractError, decode
from hilbench.contracts.capabilities import Capabilities
from hilbench.loglimit import LogLimiter
from hilbench.orchestrator import tap
from hilbench.wire import codec, keys
from hilbench.wire.codec import Message, ProtocolError
from hilbench.wire.link import AgentError, ClockOffset, probe_round_trip
from hilbench.wire.link_probe import Echo, EchoPool, LinkBound, held_burst
from hilbench.wire.message_socket import NOBLOCK, MessageSocket

log = logging.getLogger(__name__)

#: Heartbeats an agent may miss before an overdue reply is blamed on its death, not its lateness.
MISSED_BEATS = 2


class AgentUnreachable(ConnectionError):
    """No handshake: nothing listens there, or it is not a hilbench agent of our version."""


class AgentLost(ConnectionError):
    """The agent stopped answering (process died, host gone, network cut)."""

    def __init__(
        self, agent: str, silent_s: float, during: str, shutdown_by: str | None = None
    ) -> None:
        if shutdown_by is not None:  # the agent said so before it went
            what = f"it shut down at the request of {shutdown_by}"
        else:
            what = f"nothing heard for {silent_s:.1f} s"
        super().__init__(f"agent {agent} lost: {what} while waiting for {during}")
        self.agent = agent
        self.shutdown_by = shutdown_by


@dataclass
class Reply:
    body: dict[str, Any]
    arrays: list[np.ndarray]
    # The orchestrator's own window around the exchange (its clock): just before the request
    # left, and when the reply arrived. Whatever the agent says it timed must lie inside.
    sent: float = 0.0
    received: float = 0.0


class AgentClient:
    """One connected agent. Not thread-safe: use it from one thread."""

    # The network's share of a round trip the bench operator declared for this agent
    # ([[agents]] link_budget_ms): its echoes are held to the reference's plus this.
    link_budget_s: float = 0.0
    # A burst of the orchestrator's reference responder beside this link's after a late reply
    # (the runner hands it :meth:`ReferenceLink.burst`); None: the agent's own burst counts.
    reference_burst: Callable[[Echo], float | None] | None = None

    def __init__(
        self,
        address: str,
        name: str | None = None,
        *,
        heartbeat_s: float = 0.5,
        liveness: int = 6,
        connect_timeout_s: float = 5.0,
        key: keys.KeyPair | None = None,
        agent_key: bytes | None = None,
        context: zmq.Context | None = None,
        tapped: bool = True,
    ) -> None:
        if (key is None) != (agent_key is None):
            raise ValueError("CurveZMQ needs both the orchestrator's key pair and the agent's key")
        self.address = address
        self.key = key
        self.agent_key = agent_key
        self.name = name or address
        self.heartbeat_s = heartbeat_s
        self.liveness = liveness
        self.connect_timeout_s = connect_timeout_s
        self.info: dict[str, Any] = {}
        self.capabilities = Capabilities()
        # The protocol version agreed in the handshake; every message after it carries it.
        self.version = codec.PROTOCOL_VERSION
        self._ctx = context or zmq.Context.instance()
        self._sock: zmq.Socket | None = None
        self._last_heard = now()
        self._next_beat = now()
        self._sent = self._received = 0.0  # the last exchange's window (see Reply)
        self.heartbeats_received = 0
        self.session = secrets.token_hex(16)  # kept across re-greetings of this link
        self._log_limit = LogLimiter(logger=log)  # an agent cannot flood our log either
        self._echoes = EchoPool()  # this link's newest echo round trips (link_bound)
        self._pads: dict[int, np.ndarray] = {}
        # False: a link no cassette records (the orchestrator's reference responder, whose
        # bounds a recording stores itself: hilbench.orchestrator.reference_link)
        self._tapped = tapped

    @property
    def last_heard(self) -> float:
        """When the agent was last heard from (orchestrator clock): its health in `status`."""
        return self._last_heard

    # ------------------------------------------------------------ lifecycle
    def connect(self) -> dict[str, Any]:
        """Open the link and check the handshake; returns the agent's welcome info."""
        self._sock = self._open_socket()
        recording = tap.active() if self._tapped else None
        if recording is not None:  # a cassette records (or a replay feeds) this link
            self._sock = recording.agent_socket(self.name, self.address, self._sock)
        self._last_heard = now()
        return self._handshake()

    def _handshake(self) -> dict[str, Any]:
        # Until the agent has chosen, speak the oldest version (heartbeats included): an agent
        # that speaks only that one reads every message.
        self.version = min(codec.SUPPORTED_VERSIONS)
        hello = Message(
            type=codec.HELLO,
            id=codec.new_correlation_id(),
            # The session owns the agent's work: no other client can stop or replace it.
            body={"versions": list(codec.SUPPORTED_VERSIONS), "session": self.session},
            version=self.version,
        )
        started = now()
        try:
            # Silence is expected until the agent answers: the handshake timeout alone decides,
            # not the liveness rule (which used to give up after 3 s of a 5 s timeout).
            welcome = self._exchange(
                hello,
                timeout_s=self.connect_timeout_s,
                expect=codec.WELCOME,
                silence_limit_s=self.connect_timeout_s,
            )
        except (AgentLost, TimeoutError):
            waited = now() - started
            self.close()
            hint = "is `hilbench agent` running there?"
            if self.key is not None:
                hint += " Does it list this orchestrator's public key in --authorized?"
            else:
                hint += " A keyed agent answers nothing to a client without keys."
            raise AgentUnreachable(
                f"agent {self.name} at {self.address} did not answer the handshake within "
                f"{waited:.1f} s ({hint} [campaign] connect_timeout_s sets the wait)"
            ) from None
        except AgentError as exc:
            self.close()
            raise AgentUnreachable(
                f"agent {self.name} at {self.address} refused the handshake: {exc}"
            ) from None
        if welcome.body.get("protocol_version") not in codec.SUPPORTED_VERSIONS:
            self.close()
            raise AgentUnreachable(
                f"agent {self.name} speaks protocol {welcome.body.get('protocol_version')!r}; "
                f"this orchestrator supports {list(codec.SUPPORTED_VERSIONS)}"
            )
        self.version = int(welcome.body["protocol_version"])
        try:  # decoded once: what procedures read of the device
            self.capabilities = decode(Capabilities, welcome.body.get("capabilities") or {},
                                       "bad_reply", "welcome capabilities:")
        except ContractError as exc:
            self.close()
            raise AgentUnreachable(f"agent {self.name} at {self.address}: {exc}") from None
        self.info = dict(welcome.body)
        if self.name == self.address:
            self.name = str(self.info.get("agent_id", self.address))
        return self.info

    def _open_socket(self) -> zmq.Socket:
        """The socket this link talks through: a DEALER connected to the agent's ROUTER.

        A subclass may return another object with the socket calls the engine makes
        (send_message, recv_message honouring rcvtimeo, close); the listener's per-agent view
        of its ROUTER does.
        """
        sock = self._ctx.socket(zmq.DEALER, socket_class=MessageSocket)
        sock.setsockopt(zmq.LINGER, 0)
        keys.use_ipv6(sock, self.address)
        sock.copy_threshold = codec.COPY_THRESHOLD_BYTES
        if self.key is not None and self.agent_key is not None:
            keys.make_client(sock, self.key, self.agent_key)
        sock.connect(self.address)
        return sock

    def close(self) -> None:
        if self._sock is not None:
            self._sock.close(linger=0)
            self._sock = None

    def __enter__(self) -> AgentClient:
        self.connect()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -------------------------------------------------------------- requests
    def request(
        self,
        cmd: str,
        body: dict[str, Any] | None = None,
        arrays: list[np.ndarray] | None = None,
        timeout_s: float | None = None,
        while_waiting: Callable[[], None] | None = None,
    ) -> Reply:
        """Send a command and wait for its reply; raise AgentError/AgentLost/TimeoutError.

        ``while_waiting`` is called about every heartbeat interval while the reply is awaited
        (the orchestrator drains its instruments there).
        """
        msg = Message(
            type=codec.REQUEST,
            id=codec.new_correlation_id(),
            cmd=cmd,
            body=body or {},
            arrays=arrays or [],
        )
        reply = self._exchange(
            msg, timeout_s=timeout_s, expect=codec.REPLY, while_waiting=while_waiting
        )
        return Reply(reply.body, reply.arrays, self._sent, self._received)

    def clock_offset(self, probes: int = 8) -> ClockOffset:
        """NTP-style offset of the agent's clock, keeping the lowest-RTT probe."""
        best: tuple[float, float] | None = None
        for _ in range(probes):
            t1 = now()
            pong = self._exchange(
                Message(type=codec.PING, id=codec.new_correlation_id(), body={"t1": t1}),
                timeout_s=None,
                expect=codec.PONG,
            )
            t4 = now()
            t2, t3 = pong.body.get("t2"), pong.body.get("t3")
            if type(t2) is not float or type(t3) is not float:
                raise AgentError(self.name, "bad_reply", "pong needs float seconds t2 and t3")
            try:
                rtt, offset = probe_round_trip(t1, t2, t3, t4)
            except ValueError as exc:  # the agent's word against the orchestrator's window
                raise AgentError(self.name, "timing_inconsistent", f"clock probe: {exc}",
                                 {"t1": t1, "t2": t2, "t3": t3, "t4": t4}) from None
            if best is None or rtt < best[0]:
                best = (rtt, offset)
        assert best is not None
        rtt, offset = best
        return ClockOffset(offset, max(rtt, 0.0) / 2, rtt, probes)

    @property
    def probes_link(self) -> bool:
        """Whether :meth:`link_bound` echoes this link (not in the replay of a cassette
        recorded before link probes)."""
        return _probes_recorded()

    def link_bound(self, echo: Echo) -> LinkBound | None:
        """What this link costs a request shaped like ``echo``, measured (see
        :mod:`hilbench.wire.link_probe`); None in the replay of a cassette recorded
        before link probes, which is checked by the rule then in force."""
        if not _probes_recorded():
            return None
        return self._echoes.measure(echo, self._echo)

    def link_burst(self, echo: Echo) -> float:
        """The slowest of a few echoes now: the link's load right after a late reply, held to
        a burst of the orchestrator's reference responder taken after it where the runner
        gave one (:func:`held_burst`: the agent serves these echoes, as it serves those of its
        bound)."""
        if not _probes_recorded():
            return 0.0
        own = self.echo_burst(echo)
        reference = None if self.reference_burst is None else self.reference_burst(echo)
        return held_burst(own, reference, self.link_budget_s)

    def echo_burst(self, echo: Echo) -> float:
        """The slowest of a few echoes of this link now, as they came."""
        return self._echoes.burst(echo, self._echo)

    def _echo(self, shape: Echo) -> float:
        """One noop of ``shape``'s body and payload, after the link sat idle as it does while a
        device works (link_probe's doc); its round trip."""
        if shape.idle_s:
            time.sleep(shape.idle_s)
        body, nbytes = shape.body, shape.payload_bytes
        pad = self._pads.get(nbytes)
        if pad is None:
            pad = self._pads[nbytes] = np.zeros(nbytes, dtype=np.uint8)
        try:
            reply = self.request("noop", body, [pad], timeout_s=self.heartbeat_s * self.liveness)
        except AgentError as exc:
            if exc.code != "unknown_command":
                raise
            raise AgentError(self.name, "no_echo",
                             "the agent does not serve noop (agent protocol, Commands), which "
                             "the orchestrator echoes to measure what this link adds to a "
                             "timed request; without it no claimed time can be checked") from None
        return reply.received - reply.sent

    # --------------------------------------------------------------- engine
    def _exchange(
        self,
        msg: Message,
        timeout_s: float | None,
        expect: str,
        while_waiting: Callable[[], None] | None = None,
        silence_limit_s: float | None = None,
    ) -> Message:
        """Send ``msg`` and wait for its answer.

        An agent forgets an orchestrator that was silent for its liveness window (between
        phases, say) and then answers ``hello_first``: the link greets it again and retries once.
        """
        try:
            return self._exchange_once(msg, timeout_s, expect, while_waiting, silence_limit_s)
        except AgentError as exc:
            if exc.code != "hello_first" or msg.type == codec.HELLO:
                raise
        log.info("agent %s forgot this orchestrator; greeting it again", self.name)
        self._handshake()
        msg.id = codec.new_correlation_id()
        return self._exchange_once(msg, timeout_s, expect, while_waiting, silence_limit_s)

    # complexity: the request loop: one clock read per message on the hot path (hilbench bench
    # dispatch)
    def _exchange_once(  # noqa: C901
        self,
        msg: Message,
        timeout_s: float | None,
        expect: str,
        while_waiting: Callable[[], None] | None,
        silence_limit_s: float | None,
    ) -> Message:
        if self._sock is None:
            raise RuntimeError(f"agent {self.name} is not connected")
        # Never block on send: a DEALER whose connection is not up (or was refused, as a
        # CurveZMQ server does with an unknown key) has no peer to queue to.
        msg.version = self.version
        frames = codec.encode(msg)
        self._sent = now()  # nothing the agent does for this request can start before this
        unsent: list[Any] | None = self._try_send(frames)
        # The agent gets a full liveness window from now: idle time before this call is no silence.
        t = started = self._last_heard = now()
        deadline = None if timeout_s is None else started + timeout_s
        limit_s = silence_limit_s or self.heartbeat_s * self.liveness
        while True:  # ``t`` is the time at the last wake-up: one clock read per message
            overdue = deadline is not None and t >= deadline
            if overdue and started < self._last_heard >= t - self.heartbeat_s * MISSED_BEATS:
                raise TimeoutError(
                    f"agent {self.name} did not answer {_what(msg)} within {t - started:.1f} s"
                )
            # Overdue with no word from the agent lately (or none since the request went out):
            # wait for a beat (alive, so late) or the end of the liveness window (lost), so a
            # dead agent is named lost, not late.
            if unsent is not None:
                unsent = self._try_send(unsent)
            if t >= self._next_beat:
                self._try_send(codec.encode(Message(type=codec.HEARTBEAT, version=self.version)))
                self._next_beat = t + self.heartbeat_s
                if while_waiting is not None:
                    while_waiting()
                    t = now()
            silent = t - self._last_heard
            if silent > limit_s:
                raise AgentLost(self.name, silent, _what(msg))
            wait = min(self._next_beat - t, self.heartbeat_s, limit_s - silent + 0.001)
            if deadline is not None and not overdue:
                wait = min(wait, deadline - t)
            # A blocking receive with a timeout: one call on the hot path instead of poll + recv.
            self._sock.limit_receive_wait(max(1, int(wait * 1000)))
            try:
                frames = self._sock.recv_message()
            except zmq.Again:
                t = now()
                continue
            t = self._last_heard = now()
            try:
                reply = codec.decode(frames)
            except ProtocolError as exc:
                self._log_limit.log(
                    "bad message",
                    logging.WARNING,
                    "agent %s sent a bad message: %s",
                    self.name,
                    exc,
                )
                continue
            if reply.type == codec.HEARTBEAT:
                self.heartbeats_received += 1
                by = reply.body.get("shutdown_by")
                if by is not None:  # its last word: who asked it to shut down
                    raise AgentLost(self.name, 0.0, _what(msg), shutdown_by=str(by))
                continue
            if reply.id != msg.id:
                if reply.type == codec.ERROR and reply.id is None:
                    raise self._error(reply)
                log.debug("agent %s: ignoring stale %s %s", self.name, reply.type, reply.id)
                continue
            if reply.type == codec.ERROR:
                raise self._error(reply)
            if reply.type != expect:
                raise AgentError(
                    self.name, "unexpected_type", f"got {reply.type}, expected {expect}"
                )
            self._received = t
            return reply

    def _try_send(self, frames: list[Any]) -> list[Any] | None:
        """Send without blocking; returns the frames when there is no connection to queue to."""
        assert self._sock is not None
        try:
            self._sock.send_message(frames, NOBLOCK)
        except zmq.Again:
            return frames
        return None

    def _error(self, reply: Message) -> AgentError:
        body = reply.body
        return AgentError(
            self.name, str(body.get("code")), str(body.get("message")), body.get("detail")
        )


def _probes_recorded() -> bool:
    """False while a cassette recorded before link probes is replayed: its agents' channels
    hold no echoes to answer them with."""
    return getattr(tap.active(), "link_probes", True)


def _what(msg: Message) -> str:
    """The message an error is about, as a person reads it (built only when there is an error)."""
    return f"{msg.cmd or msg.type} ({msg.id})"
