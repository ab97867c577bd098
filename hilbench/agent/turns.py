"""Leader/follower turns at an agent's socket, so that a device command costs no thread hand-off.

The driver thread serves the socket while the device is idle and runs each device command
itself as soon as it has read it; a command that is over before the calling thread looks again
never gives the socket away, so its reply leaves with no thread wake-up on its way. While a
command runs for longer, the calling thread takes the socket over (heartbeats, pings, status,
stop keep being answered) and hands it back with the reply. Driver calls always run on the one
driver thread. Every change of holder goes through one condition's lock: a full memory barrier,
which ZeroMQ asks for when a socket moves between threads.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import zmq

from hilbench.agent.driver import DriverError, DriverResult
from hilbench.clock import now
from hilbench.wire import codec
from hilbench.wire.codec import Message

if TYPE_CHECKING:
    from hilbench.agent.dispatch import Dispatcher
    from hilbench.agent.driver import Driver
    from hilbench.agent.guard import BadMessageLog, Connection, LogLimiter, MemoryBudget
    from hilbench.wire.message_socket import MessageSocket

log = logging.getLogger("hilbench.agent.runtime")

# How often the calling thread looks whether the driver thread is running a device command and
# takes the socket over: heartbeats, pings and status wait at most this much longer while a
# command runs (well inside the liveness window of 6 × 0.5 s). A command that ends before the
# calling thread took over sends its own reply; one that ends after pays a thread hand-off, which
# the orchestrator's echoes of the link (instant noops) never pay: at 50 ms every QUBO run of
# 0.1 s came back 2.7 ms later than a link bound of 0.4 ms allowed with the agent in the test's
# process, at 0.25 s the same runs passed.
FOLLOWER_CHECK_S = 0.25  # the orchestrator allows such replies one more turn (LONG_COMMAND_S)
# After this long without a device command the calling thread stops looking every
# FOLLOWER_CHECK_S (an idle agent wakes only for heartbeats).
ACTIVE_SPELL_S = 5.0


@dataclass
class Job:
    """A device command admitted by whichever thread read it, for the driver thread to run."""

    route: list[bytes]
    msg: Message
    frames: list[Any]
    reserved: int  # bytes counted in the memory budget while the job is held
    conn: Connection | None = None  # the connection it came in on


class SocketTurns:
    """The turn-taking half of :class:`hilbench.agent.runtime.AgentRuntime` (a mixin).

    The runtime provides the message handling these methods call (``_drain_socket``, ``_beat``,
    ``_receive``, ``_send``, ``_send_reply``) and the state declared here.
    """

    driver: Driver
    dispatcher: Dispatcher
    heartbeat_s: float
    stats: Any
    budget: MemoryBudget
    bad_messages: BadMessageLog
    log_limiter: LogLimiter
    _turns: threading.Condition
    _turn_lock: threading.Lock  # the lock of ``_turns``
    _follower_wanted: bool
    _follower_leads: bool
    _admitted: Job | None
    _done: list[tuple[Job, Message]]
    _next_beat: float
    _command_started: float  # when the driver thread last began a device command
    _busy_with: str | None
    _stop_run: threading.Event
    _shutdown: threading.Event

    def _serve_busy(self, sock: MessageSocket, poller: zmq.Poller, wake_rx: zmq.Socket) -> None:
        """The calling thread's turn, while the driver thread runs a device command.

        It answers what needs no device (another device command gets ``busy``) until a wake
        from the driver thread says the reply is ready; it sends the reply and returns, handing
        the socket back.
        """
        while not self._shutdown.is_set():
            timeout_ms = max(0, int((self._next_beat - now()) * 1000))
            events = dict(poller.poll(timeout_ms))
            if wake_rx in events:
                while wake_rx.poll(0):
                    wake_rx.recv()
                if self._send_finished(sock):
                    return
            if sock in events:
                self._drain_socket(sock)
            if now() >= self._next_beat:
                self._beat(sock)
                self.bad_messages.flush()
                self._next_beat = now() + self.heartbeat_s

    def _serve_idle(self, sock: MessageSocket) -> bool:
        """The driver thread's turn: serve until a device command is admitted (True) or shutdown.

        One blocking receive with a timeout per message, no poller: while the driver thread
        leads nothing but the socket can need it (the follower waits on the condition), and one
        call is cheaper than a poll, an events query and a receive.
        """
        while not self._shutdown.is_set():
            t = now()
            if t >= self._next_beat:
                self._beat(sock)
                self.bad_messages.flush()
                t = now()
                self._next_beat = t + self.heartbeat_s
            sock.limit_receive_wait(max(1, int((self._next_beat - t) * 1000)))
            try:
                self._receive(sock, 0)
            except zmq.Again:
                continue
            if self._admitted is not None:
                return True
        return False

    def _drive(self, sock: MessageSocket, wake_tx: zmq.Socket) -> None:
        """The driver thread: leads while the device is idle and runs each device command."""
        try:
            while self._serve_idle(sock):
                job, self._admitted = self._admitted, None
                assert job is not None
                # The condition's own lock (one call less than the condition's ``with``, on
                # the hot path): the calling thread serves if the command runs for long.
                with self._turn_lock:
                    self._follower_wanted = True
                    t = now()
                    if t - self._command_started > ACTIVE_SPELL_S:
                        self._turns.notify()  # first command after a quiet spell: look often
                    self._command_started = t
                reply = self._run_device_command(job)
                with self._turn_lock:
                    kept = self._follower_wanted  # nobody took the socket: it is still ours
                    self._follower_wanted = False
                    if not kept:
                        self._done.append((job, reply))
                if kept:
                    self._finish(sock, job, reply)
                    continue
                wake_tx.send(b"")  # the follower leads: it sends the reply and hands back
                with self._turns:
                    while self._follower_leads and not self._shutdown.is_set():
                        self._turns.wait(self.heartbeat_s)
        finally:
            with self._turns:
                self._shutdown.set()
                self._turns.notify_all()

    def _follow(self, sock: zmq.Socket, poller: zmq.Poller, wake_rx: zmq.Socket) -> None:
        """The calling thread: idle until the driver thread runs a command, then serve."""
        while not self._shutdown.is_set():
            # Not woken per command (a wake-up costs as much as the rest of a short command's
            # round trip): while commands come, it looks every FOLLOWER_CHECK_S whether one is
            # running for long; after a quiet spell it sleeps a heartbeat interval at a time and
            # the driver thread wakes it once, at the next command.
            with self._turns:
                since = now() - self._command_started
                quiet = since > ACTIVE_SPELL_S and not self._follower_wanted
                self._turns.wait(self.heartbeat_s if quiet else FOLLOWER_CHECK_S)
                if not self._follower_wanted or now() - self._command_started < FOLLOWER_CHECK_S:
                    continue  # no command, or one that started too recently to take over
                self._follower_wanted = False
                self._follower_leads = True
            try:
                self._serve_busy(sock, poller, wake_rx)
            finally:
                with self._turns:
                    self._follower_leads = False
                    self._turns.notify_all()

    def _run_device_command(self, job: Job) -> Message:
        msg = job.msg
        if msg.cmd == "noop":  # the worker path without a device: what `bench dispatch` times
            return Message(type=codec.REPLY, id=msg.id, body=msg.body, arrays=msg.arrays)
        t0 = time.perf_counter()
        try:
            # Body and reply checked against their contracts (hilbench.contracts).
            result = self.dispatcher.call(msg.cmd or "", msg.body, msg.arrays, self._stop_run)
        except DriverError as exc:
            where = {"key": exc.key} if exc.key else {}
            return codec.error_message(exc.code, str(exc), msg.id, command=msg.cmd, **where)
        except Exception as exc:  # a driver bug must not kill the agent
            self.log_limiter.log(
                f"driver failure in {msg.cmd}",
                logging.ERROR,
                "driver %s failed in %s",
                self.driver.name,
                msg.cmd,
                exc_info=True,
            )
            return codec.error_message(
                "driver_error", f"{type(exc).__name__}: {exc}", msg.id, command=msg.cmd
            )
        if not isinstance(result, DriverResult):
            return codec.error_message(
                "driver_error", f"driver returned {type(result).__name__}", msg.id
            )
        body = dict(result.body)
        body.setdefault("agent_elapsed_s", time.perf_counter() - t0)
        return Message(type=codec.REPLY, id=msg.id, body=body, arrays=result.arrays)

    def _send_finished(self, sock: zmq.Socket) -> bool:
        """Send the replies the driver thread left for the follower; True if there were any."""
        with self._turns:
            done, self._done = self._done, []
        for job, reply in done:
            self._finish(sock, job, reply)
        return bool(done)

    def _finish(self, sock: zmq.Socket, job: Job, reply: Message) -> None:
        """Send a device command's reply and free the device for the next one.

        The bookkeeping comes after the send, off the round trip's critical path: the thread
        that sends reads no message before it is done.
        """
        self._send_reply(sock, job.route, reply, job.msg, job.frames, job.reserved, job.conn)
        self._busy_with = None
        if reply.type == codec.ERROR:
            self.stats.errors += 1
        else:
            self.stats.served += 1
