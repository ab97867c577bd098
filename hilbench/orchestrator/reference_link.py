"""The orchestrator's own responder: echoes that no agent can slow, beside each agent's.

An agent's echoes (:mod:`hilbench.wire.link_probe`) set the bound its timed requests are held
to, and the agent serves them: one that slows its own echoes (a thread that holds the GIL made
every echo wait about 5 ms: a 12 ms short claim then passed as on time in 4 of 6 runs) widens
its own bound. So before each timed phase the orchestrator also echoes, with the same shape and
idle step, an agent runtime of its own: the same worker path, serving no device, in a process
of its own on loopback (:mod:`.reference_agent`), keyed so that no other local process reaches
it. :meth:`LinkBound.against` holds the agent's echoes to it.

A process, not a thread of the orchestrator's: a thread shared the orchestrator's clock hook (a
replay's frozen clock set its receive timeouts), its protocol settings and its GIL, and a fault
of its socket would abort the orchestrator. One serves every campaign of the process; it is
started at the first bound, from a daemon thread that lives as long as the process (a child's
parent-death signal follows the thread that started it, and the process's exit never waits for
a daemon), started again when it stops answering, and ends with the process
(:mod:`hilbench.lifeline`).

Its round trips are taken on that thread, so a cassette's clock (which records the
orchestrator's thread) does not see them; a recording stores each bound instead, and its replay
hands the stored bounds back in order (:meth:`Tap.reference_bound`), starting no responder; so
with the bursts taken beside an agent's after a late reply (:meth:`Tap.reference_burst`). A
cassette recorded before the reference (or its bursts) has none: its replay is checked by the
rule then in force.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import queue
import threading
from concurrent.futures import Future
from typing import Any

from hilbench.orchestrator import reference_agent, spawn, tap
from hilbench.wire import codec
from hilbench.wire.link import AgentError
from hilbench.wire.link_probe import Echo, LinkBound

log = logging.getLogger(__name__)


class ReferenceLink:
    """A responder process serving no device, and a client echoing it, started at the first
    bound asked for and kept until :meth:`close` or the process's end."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._thread: _OwnThread | None = None
        self._process: spawn.SpawnedProcess | None = None
        self._client: Any = None
        self._versions: tuple[int, ...] = ()  # the protocol versions its client started with

    def bound(self, echo: Echo) -> LinkBound | None:
        """The reference's bound for requests shaped like ``echo`` (a replay: the recorded
        one; None for a cassette recorded before the reference)."""
        def measure() -> LinkBound:
            return self._on_own_thread(self._measure, echo)  # type: ignore[no-any-return]

        recording = tap.active()
        return measure() if recording is None else recording.reference_bound(measure)

    def burst(self, echo: Echo) -> float | None:
        """The slowest of a burst of the reference's echoes shaped like ``echo`` now, beside an
        agent's after a late reply (a replay: the recorded one; None for a cassette recorded
        before the reference's bursts)."""
        def measure() -> float:
            return self._on_own_thread(self._measure_burst, echo)  # type: ignore[no-any-return]

        recording = tap.active()
        return measure() if recording is None else recording.reference_burst(measure)

    def _on_own_thread(self, call: Any, *args: Any) -> Any:
        with self._lock:
            if self._thread is None:
                self._thread = _OwnThread()
            thread = self._thread
        return thread.run(call, *args)

    def _measure(self, echo: Echo) -> LinkBound:
        """The client's own pool of echoes, as for any agent (:meth:`AgentClient.link_bound`)."""
        bound = self._answered(lambda client: client.link_bound(echo))
        assert bound is not None  # the reference is echoed only where echoes are recorded
        return dataclasses.replace(bound, source="reference")

    def _measure_burst(self, echo: Echo) -> float:
        """A burst of the client's echoes, as after an agent's late reply."""
        return float(self._answered(lambda client: client.echo_burst(echo)))

    def _answered(self, ask: Any) -> Any:
        """``ask(client)`` of the responder; a new client when this process's protocol
        versions changed since (a test that speaks an older version), a new responder once
        when it stopped answering."""
        if self._client is None or self._versions != codec.SUPPORTED_VERSIONS:
            self._connect()
        try:
            return ask(self._client)
        except (AgentError, ConnectionError, TimeoutError) as exc:
            log.warning("the reference responder stopped answering (%s): starting it again",
                        exc)
            self._stop()
            self._connect()
            return ask(self._client)

    def _connect(self) -> None:
        from hilbench.orchestrator.client import AgentClient

        if self._client is not None:
            self._client.close()
            self._client = None
        if self._process is None or self._process.process.poll() is not None:
            self._process = spawn.spawn_own("reference responder", reference_agent.MODULE)
        self._versions = codec.SUPPORTED_VERSIONS
        self._client = AgentClient(self._process.address, "reference", tapped=False,
                                   **self._process.client_keys())
        self._client.connect()

    def _stop(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None
        if self._process is not None:
            self._process.stop(timeout_s=2.0)
            self._process = None

    def close(self) -> None:
        """Stop the responder and its client (a test's; a campaign's process keeps it)."""
        with self._lock:
            thread, self._thread = self._thread, None
        if thread is not None:
            thread.run(self._stop)
            thread.end()


class _OwnThread:
    """The one thread the reference's calls run on, in turn. It lives as long as the process
    (the responder's parent-death signal follows the thread that started it) and is a daemon:
    the process's exit never waits for a call a stop signal cut short in the main thread (a
    thread pool's worker is joined at exit)."""

    def __init__(self) -> None:
        self._calls: queue.SimpleQueue[tuple[Future[Any], Any, tuple[Any, ...]] | None] = (
            queue.SimpleQueue())
        threading.Thread(target=self._serve, daemon=True, name="hilbench-reference").start()

    def run(self, call: Any, *args: Any) -> Any:
        future: Future[Any] = Future()
        self._calls.put((future, call, args))
        return future.result()

    def end(self) -> None:
        self._calls.put(None)

    def _serve(self) -> None:
        while (item := self._calls.get()) is not None:
            future, call, args = item
            try:
                future.set_result(call(*args))
            except BaseException as exc:  # handed to the caller, which re-raises it
                future.set_exception(exc)


_shared: ReferenceLink | None = None
_shared_lock = threading.Lock()


def _forget_in_child() -> None:
    """A forked child has none of its parent's threads: it starts a reference of its own."""
    global _shared, _shared_lock
    _shared, _shared_lock = None, threading.Lock()


os.register_at_fork(after_in_child=_forget_in_child)


def reference() -> ReferenceLink:
    """This process's reference responder, started at its first bound (one serves every
    campaign the process runs, and ends with it)."""
    global _shared
    with _shared_lock:
        if _shared is None:
            _shared = ReferenceLink()
        return _shared
