"""Ports a test's processes listen on, each worker from a range of its own.

A port probed free with ``bind(0)`` and released is an ephemeral one: in the moment before the
test's process binds it, another worker's agent or client (they run in parallel) can be given
the same number by the kernel. These come from below the kernel's ephemeral range
(``/proc/sys/net/ipv4/ip_local_port_range``, 32768-60999 by default), a block per xdist
worker, so neither happens; one still in use (an earlier test's process lingering) is skipped.
"""

from __future__ import annotations

import itertools
import os
import re
import socket

BASE = 21000
PER_WORKER = 400

_worker = re.sub(r"\D", "", os.environ.get("PYTEST_XDIST_WORKER", "gw0")) or "0"
_next = itertools.cycle(range(BASE + int(_worker) * PER_WORKER,
                              BASE + (int(_worker) + 1) * PER_WORKER))


def worker_port() -> int:
    """A loopback port free now that no other worker will be handed."""
    for _ in range(PER_WORKER):
        port = next(_next)
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise RuntimeError(f"no free port in this worker's block from {BASE}")
