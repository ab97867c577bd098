"""The orchestrator's own responder: echoes that no agent can slow, beside each agent's.

An agent's echoes (:mod:`hilbench.wire.link_probe`) set the bound its timed requests are held
to, and the agent serves them: one that slows its own echoes (a thread that holds the GIL made
every echo wait about 5 ms: a 12 ms short claim then passed as on time in 4 of 6 runs) widens
its own bound. So before each timed phase the orchestrator also echoes, with the same shape and
idle step, an agent runtime of its own: the same worker path, in a thread of this process,
serving no device, on loopback. :meth:`LinkBound.against` holds the agent's echoes to it.

Its round trips are taken on a thread of their own, so a cassette's clock (which records the
orchestrator's thread) does not see them; a recording stores each bound instead, and its replay
hands the stored bounds back in order (:meth:`Tap.reference_bound`). A cassette recorded before
the reference has none: its replay is checked by the rule then in force (no reference).
"""

from __future__ import annotations

import dataclasses
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any, ClassVar

from hilbench.orchestrator import tap
from hilbench.wire import codec
from hilbench.wire.link import AgentError
from hilbench.wire.link_probe import Echo, LinkBound


class _NoDevice:
    """A driver that declares no workload: the reference answers echoes (``noop``) only."""

    name: ClassVar[str] = "reference"

    def capabilities(self) -> dict[str, Any]:
        return {}

    def close(self) -> None:
        pass


class ReferenceLink:
    """An agent runtime serving no device on loopback, and a client echoing it, started at
    the first bound asked for and kept until :meth:`close`."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._runtime: Any = None
        self._client: Any = None
        self._thread: threading.Thread | None = None
        self._executor: ThreadPoolExecutor | None = None
        self._versions: tuple[int, ...] = ()  # the protocol versions it was started with

    def bound(self, echo: Echo) -> LinkBound | None:
        """The reference's bound for requests shaped like ``echo`` (a replay: the recorded
        one; None for a cassette recorded before the reference)."""
        recording = tap.active()
        if recording is not None:
            return recording.reference_bound(lambda: self._measure(echo))
        return self._measure(echo)

    def _measure(self, echo: Echo) -> LinkBound:
        """Echoes of ``echo``'s shape on the reference's own thread (the cassette clock does not
        record it); started the first time, and again when this process's protocol versions
        changed since (a test that speaks an older version) or it stopped answering."""
        with self._lock:
            if self._executor is None:
                self._executor = ThreadPoolExecutor(1, thread_name_prefix="hilbench-reference")
                self._executor.submit(self._start).result()
            executor = self._executor
        if self._versions != codec.SUPPORTED_VERSIONS:  # the process speaks otherwise now
            executor.submit(self._restart).result()
        try:
            bound = executor.submit(self._echo, echo).result()
        except (AgentError, ConnectionError, TimeoutError):  # it stopped answering: once more
            executor.submit(self._restart).result()
            bound = executor.submit(self._echo, echo).result()
        return dataclasses.replace(bound, source="reference")

    def _echo(self, echo: Echo) -> LinkBound:
        """The client's own pool of echoes, as for any agent (:meth:`AgentClient.link_bound`);
        never None: the reference is echoed only where echoes are recorded."""
        bound = self._client.link_bound(echo)
        assert bound is not None
        return bound

    def _restart(self) -> None:
        self._runtime.request_shutdown()  # its thread ends at its next heartbeat
        self._client.close()
        self._start()

    def _start(self) -> None:
        from hilbench.agent.runtime import AgentRuntime
        from hilbench.orchestrator.client import AgentClient

        self._runtime = AgentRuntime(_NoDevice(), "reference", bind="tcp://127.0.0.1:*")
        self._thread = threading.Thread(target=self._runtime.serve, daemon=True,
                                        name="hilbench-reference-agent")
        self._thread.start()
        if not self._runtime.wait_ready(10.0):
            raise RuntimeError("the orchestrator's reference responder did not start in 10 s")
        self._versions = codec.SUPPORTED_VERSIONS
        self._client = AgentClient(self._runtime.endpoint, "reference", tapped=False)
        self._client.connect()

    def close(self) -> None:
        with self._lock:
            executor, self._executor = self._executor, None
        if executor is None:
            return
        executor.submit(self._client.close).result()
        executor.shutdown()
        self._runtime.request_shutdown()
        if self._thread is not None:
            self._thread.join(5.0)


_shared: ReferenceLink | None = None
_shared_lock = threading.Lock()


def _forget_in_child() -> None:
    """A forked child has none of its parent's threads: it starts a reference of its own."""
    global _shared, _shared_lock
    _shared, _shared_lock = None, threading.Lock()


os.register_at_fork(after_in_child=_forget_in_child)


def reference() -> ReferenceLink:
    """This process's reference responder, started at its first bound (one serves every
    campaign the process runs; its thread ends with the process)."""
    global _shared
    with _shared_lock:
        if _shared is None:
            _shared = ReferenceLink()
        return _shared
