"""The orchestrator's side of agents that dial in (`hilbench agent --connect ADDR`).

The orchestrator binds one ROUTER; each agent connects a DEALER whose ZeroMQ identity is its
agent id and speaks first (a heartbeat), so the ROUTER learns who it is. Every connected agent
is then driven through an :class:`AgentLink`, which *is* an
:class:`~hilbench.orchestrator.client.AgentClient`: the handshake, request/reply matching,
heartbeats, liveness and clock probes are the client's own code. Only the socket differs: a
:class:`RoutedSocket` looks like the client's DEALER but sends through the shared ROUTER with
the agent's identity in front and reads from that agent's inbox.

Demultiplexing is single-threaded: whichever link is waiting pumps the ROUTER, and each message
is filed under the identity it came from. A heartbeat from an agent nobody is waiting on is
counted on its link and dropped (it only says "alive"); anything else is queued for its agent,
never dropped. Use one listener, and its links, from one thread.
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import zmq

from hilbench.clock import now
from hilbench.loglimit import LogLimiter
from hilbench.orchestrator.client import AgentClient, AgentUnreachable
from hilbench.wire import codec, keys
from hilbench.wire.codec import Message, ProtocolError

log = logging.getLogger(__name__)

# Messages kept per agent before the oldest is discarded; only a peer that floods us gets near it.
INBOX_LIMIT = 4096


@dataclass
class _Peer:
    """What the listener knows about one identity that has spoken to its ROUTER."""

    identity: bytes
    agent_id: str
    first_heard: float
    last_heard: float
    inbox: deque[list[Any]] = field(default_factory=lambda: deque(maxlen=INBOX_LIMIT))
    heartbeats: int = 0
    link: AgentLink | None = None
    # When its last link was closed: what was heard before may be an incarnation that is gone
    # (an agent that shut down says so in its last heartbeat), so a new link waits for news.
    detached_at: float = float("-inf")


class RoutedSocket:
    """One agent's view of the shared ROUTER, shaped like the DEALER an ``AgentClient`` uses.

    It implements the socket calls the client makes (``setsockopt``, ``connect``,
    ``send_message``, ``poll``, ``recv_message`` honouring ``rcvtimeo``, ``close``) and
    nothing more.
    """

    copy_threshold: int = codec.COPY_THRESHOLD_BYTES

    def __init__(self, listener: AgentListener, peer: _Peer) -> None:
        self._listener = listener
        self._peer = peer
        self.closed = False
        self.rcvtimeo = -1  # ms a blocking receive waits before zmq.Again; -1 waits for ever

    def setsockopt(self, option: int, value: Any) -> None:
        """Only the receive timeout is per agent; other options belong to the shared ROUTER."""
        if option == zmq.RCVTIMEO:
            self.rcvtimeo = int(value)

    def connect(self, address: str) -> None:
        """The agent dialled us; there is nothing to connect."""

    def limit_receive_wait(self, ms: int) -> None:
        """Let a blocking receive wait at most ``ms``."""
        self.rcvtimeo = ms

    def send_message(self, frames: Sequence[Any], flags: int = 0) -> None:
        self._check_open()
        self._listener._send(self._peer, frames)

    def poll(self, timeout: int | None = None, flags: int = zmq.POLLIN) -> int:
        """``zmq.POLLIN`` once this agent has a message queued, else 0 after ``timeout`` ms."""
        self._check_open()
        timeout_s = None if timeout is None or timeout < 0 else timeout / 1000
        return zmq.POLLIN if self._listener._pump(self._peer, timeout_s) else 0

    def recv_message(self, flags: int = 0) -> list[Any]:
        self._check_open()
        if not self._peer.inbox:
            if flags & zmq.NOBLOCK:
                raise zmq.Again()
            timeout_s = None if self.rcvtimeo < 0 else self.rcvtimeo / 1000
            if not self._listener._pump(self._peer, timeout_s):
                raise zmq.Again()
        return self._peer.inbox.popleft()

    def close(self, linger: int | None = None) -> None:
        if not self.closed:
            self.closed = True
            self._listener._detach(self._peer, self)

    def _check_open(self) -> None:
        if self.closed:
            raise RuntimeError(f"the link to agent {self._peer.agent_id} is closed")


class AgentLink(AgentClient):
    """An agent that connected to an :class:`AgentListener`; the same interface as AgentClient.

    ``connect()`` performs the HELLO/WELCOME handshake over the listener (the agent is already
    connected); ``address`` is the listener's endpoint, ``name`` the agent id.
    """

    def __init__(
        self,
        listener: AgentListener,
        peer: _Peer,
        *,
        heartbeat_s: float,
        liveness: int,
        connect_timeout_s: float,
    ) -> None:
        self.transport = RoutedSocket(listener, peer)
        super().__init__(
            listener.endpoint or "",
            peer.agent_id,
            heartbeat_s=heartbeat_s,
            liveness=liveness,
            connect_timeout_s=connect_timeout_s,
        )

    def _open_socket(self) -> RoutedSocket:  # type: ignore[override]
        """This agent's view of the listener's ROUTER, in place of a DEALER of its own."""
        return self.transport

    def connect(self) -> dict[str, Any]:
        info = super().connect()
        if info.get("agent_id") != self.name:
            self.close()
            raise AgentUnreachable(
                f"the agent connected to {self.address} as {self.name!r} calls itself "
                f"{info.get('agent_id')!r} in its welcome; refusing a peer whose identity and "
                "agent id disagree"
            )
        return info

    @property
    def closed(self) -> bool:
        return self.transport.closed


class AgentListener:
    """A bound ROUTER that agents started with ``--connect`` dial into.

    ``start()`` binds and returns the endpoint to give the agents; ``wait_for(agent_id)``
    returns a handshaken :class:`AgentLink` once that agent has connected.
    """

    def __init__(
        self,
        bind: str = "tcp://127.0.0.1:*",
        heartbeat_s: float = 0.5,
        liveness: int = 6,
        *,
        handshake_timeout_s: float = 5.0,
        max_payload_bytes: int = codec.DEFAULT_MAX_PAYLOAD_BYTES,
        key: keys.KeyPair | None = None,
        agent_keys: dict[str, bytes] | None = None,
        context: zmq.Context | None = None,
    ) -> None:
        """With ``key``, agents must dial in over CurveZMQ with the public key that
        ``agent_keys`` gives for their agent id; any other key gets no connection, and an agent
        presenting another agent's key is ignored."""
        if key is not None and not agent_keys:
            raise ValueError("a keyed listener needs the public key of each agent that dials in")
        self.key = key
        self.agent_keys = dict(agent_keys or {})
        self._log_limit = LogLimiter(logger=log)  # what agents can make us repeat
        self._gate: keys.Gatekeeper | None = None
        self.bind = bind
        self.heartbeat_s = heartbeat_s
        self.liveness = liveness
        self.handshake_timeout_s = handshake_timeout_s
        self.max_payload_bytes = max_payload_bytes
        self.endpoint: str | None = None
        # A keyed listener runs its own ZAP authenticator, which needs a context of its own.
        self._own_context = context is None and key is not None
        self._ctx = context or (zmq.Context() if key is not None else zmq.Context.instance())
        self._router: zmq.Socket | None = None
        self._peers: dict[bytes, _Peer] = {}
        self._next_beat = now()

    # ------------------------------------------------------------ lifecycle
    def start(self) -> str:
        """Bind the ROUTER; returns the endpoint actually bound (with the port resolved)."""
        if self._router is not None:
            return self.endpoint or ""
        sock = self._ctx.socket(zmq.ROUTER)
        sock.setsockopt(zmq.LINGER, 0)
        keys.use_ipv6(sock, self.bind)
        # An agent that restarts with the same id takes its identity over instead of being refused.
        sock.setsockopt(zmq.ROUTER_HANDOVER, 1)
        sock.setsockopt(zmq.MAXMSGSIZE, codec.MAX_HEADER_BYTES + self.max_payload_bytes)
        sock.copy_threshold = codec.COPY_THRESHOLD_BYTES
        if self.key is not None:
            allowed = {pub: agent_id for agent_id, pub in self.agent_keys.items()}
            self._gate = keys.Gatekeeper(self._ctx, allowed)
            keys.make_server(sock, self.key)
        try:
            sock.bind(self.bind)
        except zmq.ZMQError as exc:
            sock.close(linger=0)
            raise OSError(f"agent listener cannot bind {self.bind}: {exc}") from None
        self._router = sock
        self.endpoint = sock.getsockopt_string(zmq.LAST_ENDPOINT)
        log.info("listening for agents on %s", self.endpoint)
        return self.endpoint

    def close(self) -> None:
        """Close every link and the ROUTER."""
        for peer in self._peers.values():
            if peer.link is not None:
                peer.link.close()
        if self._router is not None:
            self._router.close(linger=0)
            self._router = None
        if self._gate is not None:
            self._gate.stop()
            self._gate = None
            if self._own_context:
                self._ctx.term()

    def __enter__(self) -> AgentListener:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --------------------------------------------------------------- agents
    def agents(self) -> list[str]:
        """Agent ids heard from so far, in the order they first spoke."""
        if self._router is not None:
            self._pump(None, 0)
        return [p.agent_id for p in sorted(self._peers.values(), key=lambda p: p.first_heard)]

    def wait_for(self, agent_id: str, timeout_s: float) -> AgentLink:
        """The link to ``agent_id``, handshaken; waits up to ``timeout_s`` for it to connect.

        Calling it again for a connected agent returns the same link. Raises AgentUnreachable
        when the agent does not connect in time or does not complete the handshake.
        """
        if self._router is None:
            raise RuntimeError("AgentListener.wait_for: call start() first")
        identity = agent_id.encode()
        deadline = now() + timeout_s
        while True:
            self._pump(None, 0)
            peer = self._peers.get(identity)
            if peer is not None and peer.link is not None and not peer.link.closed:
                return peer.link
            if (peer is not None and peer.last_heard > peer.detached_at
                    and self._recently_heard(peer)):
                break
            remaining = deadline - now()
            if remaining <= 0:
                seen = ", ".join(self.agents()) or "none"
                raise AgentUnreachable(
                    f"agent {agent_id!r} did not connect to {self.endpoint} within "
                    f"{timeout_s:.1f} s (start it with `hilbench agent --driver NAME "
                    f"--connect {self.endpoint} --id {agent_id}`); agents heard from: {seen}"
                )
            self._pump(None, min(remaining, self.heartbeat_s))
        link = AgentLink(
            self,
            peer,
            heartbeat_s=self.heartbeat_s,
            liveness=self.liveness,
            connect_timeout_s=self.handshake_timeout_s,
        )
        peer.link = link
        try:
            link.connect()
        except AgentUnreachable as exc:
            raise AgentUnreachable(
                f"agent {agent_id!r} connected to {self.endpoint} but the handshake failed: {exc}"
            ) from None
        log.info("agent %s connected to %s", agent_id, self.endpoint)
        return link

    # ---------------------------------------------------------------- engine
    def _recently_heard(self, peer: _Peer) -> bool:
        return now() - peer.last_heard <= self.heartbeat_s * self.liveness

    def _send(self, peer: _Peer, frames: Sequence[Any]) -> None:
        if self._router is None:
            raise RuntimeError(f"agent listener on {self.endpoint} is closed")
        # ROUTER never blocks: a message to an identity that is gone is dropped, and the silence
        # that follows is what declares the agent lost.
        self._router.send_multipart([peer.identity, *frames], copy=False)

    def _detach(self, peer: _Peer, sock: RoutedSocket) -> None:
        if peer.link is not None and peer.link.transport is sock:
            peer.link = None
            peer.inbox.clear()
            peer.detached_at = now()

    def _pump(self, want: _Peer | None, timeout_s: float | None) -> bool:
        """File incoming messages by identity until ``want`` has one queued or time runs out.

        Also heartbeats every agent heard from recently, so agents not being waited on still
        see their orchestrator alive.
        """
        if self._router is None:
            raise RuntimeError(f"agent listener on {self.endpoint} is closed")
        deadline = None if timeout_s is None else now() + timeout_s
        while True:
            self._drain(want)
            if want is not None and want.inbox:
                return True
            t = now()
            if t >= self._next_beat:
                self._beat(skip=want)
                self._next_beat = t + self.heartbeat_s
            if deadline is not None and t >= deadline:
                return False
            wait = self._next_beat - t
            if deadline is not None:
                wait = min(wait, deadline - t)
            self._router.poll(max(1, int(wait * 1000)), zmq.POLLIN)

    def _drain(self, want: _Peer | None) -> None:
        assert self._router is not None
        while True:
            try:
                frames = self._router.recv_multipart(zmq.NOBLOCK, copy=False)
            except zmq.Again:
                return
            self._file(frames, want)

    def _file(self, frames: list[Any], want: _Peer | None) -> None:
        identity = frames[0].bytes
        if identity[:1] == b"\0" or len(frames) < 2:
            # ZeroMQ made this identity up: the peer set none, so it is no hilbench agent.
            log.debug("ignoring a message from anonymous peer %r", identity)
            return
        if self.key is not None and not self._key_matches(identity, frames[-1]):
            return
        t = now()
        peer = self._peers.get(identity)
        if peer is None:
            agent_id = identity.decode("utf-8", errors="backslashreplace")
            peer = self._peers[identity] = _Peer(identity, agent_id, t, t)
            log.info("agent %s connected to %s", agent_id, self.endpoint)
        peer.last_heard = t
        body = frames[1:]
        if peer is not want and _is_heartbeat(body):
            peer.heartbeats += 1
            if peer.link is not None:
                peer.link.heartbeats_received += 1
            return
        peer.inbox.append(body)

    def _key_matches(self, identity: bytes, frame: Any) -> bool:
        """True when the message came with the CurveZMQ key configured for that agent id."""
        agent_id = identity.decode("utf-8", errors="backslashreplace")
        user = frame.get("User-Id") if hasattr(frame, "get") else None
        want = self.agent_keys.get(agent_id)
        if want is not None and user == want.decode():
            return True
        self._log_limit.log(
            "wrong key",
            logging.WARNING,
            "ignoring a message from agent id %r: it did not come with that agent's key",
            agent_id,
        )
        return False

    def _beat(self, skip: _Peer | None) -> None:
        encoded: dict[int, list] = {}  # one encoding per protocol version in use
        for identity, peer in list(self._peers.items()):
            # The waiting link beats its own agent; a long-silent one is not spoken to, and one
            # without a link is forgotten.
            if peer is skip:
                continue
            if self._recently_heard(peer):
                version = peer.link.version if peer.link is not None else min(
                    codec.SUPPORTED_VERSIONS)
                frames = encoded.get(version)
                if frames is None:
                    frames = encoded[version] = codec.encode(
                        Message(type=codec.HEARTBEAT, version=version))
                self._send(peer, frames)
            elif peer.link is None or peer.link.closed:
                del self._peers[identity]


def _is_heartbeat(frames: list[Any]) -> bool:
    if len(frames) != 1:
        return False
    try:
        return codec.decode(frames).type == codec.HEARTBEAT
    except ProtocolError:
        return False
