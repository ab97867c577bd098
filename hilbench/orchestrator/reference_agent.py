"""The reference responder's process (:mod:`hilbench.orchestrator.reference_link`): an agent
runtime that serves no device, on loopback, keyed with the pair its orchestrator hands down.

A process of its own, as a local agent is: it shares no clock hook, protocol setting, socket or
GIL with the orchestrator, so what the orchestrator does between phases cannot slow it, and a
fault of its own cannot take the orchestrator down. Started only by :func:`spawn.spawn_own`.
"""

from __future__ import annotations

import argparse
import contextlib
import os
from typing import Any, ClassVar

MODULE = __name__
SILENCE_KEPT_BEATS = 7200  # heartbeats of 0.5 s: an hour


def _end() -> None:
    """Nothing to finish or lose (no device, no state): end at once, not at the next beat, and
    take the log (stderr, a file :func:`spawn.spawn_own` made) along when it holds nothing, as a
    clean stop does, also when the orchestrator was killed."""
    with contextlib.suppress(OSError):
        if os.fstat(2).st_size == 0:
            os.unlink(os.readlink("/proc/self/fd/2"))
    os._exit(0)


class NoDevice:
    """A driver that declares no workload: the reference answers echoes (``noop``) only."""

    name: ClassVar[str] = "reference"

    def capabilities(self) -> dict[str, Any]:
        return {}

    def close(self) -> None:
        pass


def main(argv: list[str] | None = None) -> None:
    """Serve until SIGTERM (the orchestrator's stop, or its death: :mod:`hilbench.lifeline`)."""
    parser = argparse.ArgumentParser(prog=f"python -m {MODULE}", description=__doc__)
    parser.add_argument("--key-fd", type=int, required=True,
                        help="descriptor holding the key pair and the one key it admits")
    parser.add_argument("--parent", type=int, required=True,
                        help="the orchestrator's pid: this process ends with it")
    parser.add_argument("--announce", action="store_true", help="print READY <endpoint>")
    args = parser.parse_args(argv)

    from hilbench.lifeline import call_on_signal, follow_parent

    call_on_signal(_end)
    follow_parent(args.parent)  # started without preexec_fn (spawn.spawn_own)

    from hilbench.agent.runtime import AgentRuntime
    from hilbench.wire import keys

    pair, authorized = keys.read_handover(args.key_fd)
    # Its one client echoes it before each timed phase and is silent in between (for as long as
    # an operator pauses a daemon): the peer is kept for an hour of silence, not forgotten after
    # 3 s and greeted again with a warning in the log.
    runtime = AgentRuntime(NoDevice(), "reference", bind="tcp://127.0.0.1:*", key=pair,
                           authorized=authorized, liveness=SILENCE_KEPT_BEATS)
    runtime.tell_when_ready(args.announce, banner=False)  # stdout is a pipe no one reads after
    runtime.serve()


if __name__ == "__main__":
    main()
