"""A cpu ASC agent whose stage times are forged 60× short, in a process of its own: each
single-stream sample occupies at least 12 ms of its request's window, but claims 0.1 ms of
pre-processing and 0.1 ms of inference in a region of 0.2 ms (consistent with its stages, placed
where the sample began)::

    python tests/short_claim_agent.py [--version 2] [--slow-echoes [--every 3]]

prints ``ENDPOINT tcp://…`` once bound. ``--version 2`` serves protocol 2 only, so an
orchestrator runs single stream with one request per sample instead of sample lists.
``--slow-echoes`` also delays each echo (``noop``) the orchestrator measures the link with by
``SLOW_ECHO_S``, which widened the link's bound past what this liar hides, so that it passed
every check, before the echoes were held to the orchestrator's own reference. (A thread that
spins Python and so holds the GIL does the same without touching the protocol: each echo then
waited about 5 ms, and the liar passed in 4 of 6 runs.) ``--every 3`` slows only every third
echo: their median stays the host's, their 75th percentile (which the typical check reads) is
the slowed one, so comparing medians alone kept its own echoes and it passed.
"""

from __future__ import annotations

import argparse
import sys
import threading
import time
from typing import Any, ClassVar

from hilbench.agent.driver import DriverResult
from hilbench.agent.runtime import AgentRuntime
from hilbench.wire import codec

try:
    from tests.cpu_wrapper import CpuWrapper
except ImportError:  # run as a script: the repository root is not on the path
    sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parents[1]))
    from tests.cpu_wrapper import CpuWrapper

# 11.8 ms a sample unclaimed. The liar hid 1.8 ms: on a sample list that is within what a
# loaded host lets a sample's load and unload take (the fastest of four pairs was 2.15 ms in
# stop 44's CI), so it is caught on an idle host only (hilbench/workloads/asc/procedures/timing.py)
# A liar hiding 4.8 ms stood 2.3 ms past a one-request-per-sample bound of 3.2 ms in a green CI
# run, and in CI-14, on a host slow enough to fail other timing tests, both paths judged it on
# time: a liar is caught when it hides more than the host's noise, so this one hides plenty.
OCCUPIED_S = 12e-3
CLAIMED_STAGE_S = 1e-4
SLOW_ECHO_S = 25e-3  # past what a sample hides (12 ms), so its typical check passes it too


class ShortClaimDriver(CpuWrapper):
    name: ClassVar[str] = "short-claim"

    def run(self, params: dict[str, Any], stop: threading.Event) -> DriverResult:
        began = time.monotonic()
        reply = self.inner.run(params, stop)
        if params.get("mode") != "single_stream":
            return reply
        while time.monotonic() - began < OCCUPIED_S:
            time.sleep(1e-4)
        body = dict(reply.body)
        body.update(preprocess_s=CLAIMED_STAGE_S, inference_s=CLAIMED_STAGE_S,
                    t_end=body["t_start"] + 2 * CLAIMED_STAGE_S)
        return DriverResult(body, reply.arrays)


class SlowEchoes(AgentRuntime):
    every = 1  # slow each echo, or every n-th

    def _run_device_command(self, job: Any) -> Any:
        if job.msg.cmd == "noop":
            self.echoes = getattr(self, "echoes", 0) + 1
            if self.echoes % self.every == 0:
                time.sleep(SLOW_ECHO_S)
        return super()._run_device_command(job)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--version", type=int, default=None)
    parser.add_argument("--slow-echoes", action="store_true")
    parser.add_argument("--every", type=int, default=1, help="slow every n-th echo only")
    args = parser.parse_args()
    SlowEchoes.every = args.every
    if args.version is not None:
        codec.SUPPORTED_VERSIONS = (args.version,)
    runtime = (SlowEchoes if args.slow_echoes else AgentRuntime)(
        ShortClaimDriver("/nonexistent-powercap"), "short", bind="tcp://127.0.0.1:*")
    thread = threading.Thread(target=runtime.serve, daemon=True)
    thread.start()
    runtime.wait_ready()
    print("ENDPOINT", runtime.endpoint, flush=True)
    thread.join()


if __name__ == "__main__":
    main()
