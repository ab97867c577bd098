"""How long the orchestrator waits before it runs a unit again whose timing it could not verify.

A reply comes back late (``unverified``) when the host is busy: another process takes the CPU
from the orchestrator or the agent for tens to hundreds of milliseconds. Such load comes in
spells (a build, a backup, another suite on the same machine), and runs tried back to back all
fall inside one spell: with the orchestrator stopped 0.3 s in every second for a minute, an ASC
power unit came out unverified in all ten of its attempts, each a few seconds long. A single
late reply is common on a busy host (13 % of 1 ms QUBO replies at a load of 6 on 2 cores), so
the second attempt follows at once; a second one in a row is a spell, and before each further
attempt the runner waits ``[campaign] timing_retry_wait_s``, doubled each time up to
:data:`MAX_WAIT_S`, so the attempts spread over minutes instead of seconds. A liar gains
nothing by it: every attempt is checked alike. A replay's clock does not wait
(:func:`hilbench.clock.sleep`).
"""

from __future__ import annotations

from hilbench.clock import sleep
from hilbench.orchestrator.interrupt import raise_if_interrupted

MAX_WAIT_S = 30.0  # the longest single wait: a default campaign (3 attempts) waits 0 + 0.5 s
SLICE_S = 0.25  # a stop signal is answered within this while waiting


def retry_wait_s(first_s: float, attempts_done: int) -> float:
    """The wait before the attempt after ``attempts_done`` unverified ones in a row: none after
    one, ``first_s`` after two, doubled for each further one, at most :data:`MAX_WAIT_S`
    (``first_s`` 0: never)."""
    if first_s <= 0 or attempts_done < 2:
        return 0.0
    return min(MAX_WAIT_S, first_s * 2.0 ** (attempts_done - 2))


def wait_out(seconds: float) -> None:
    """Wait ``seconds`` in slices, raising ``Interrupted`` between them on a stop signal. The
    clock is not read: a recording and its replay read it the same number of times."""
    slices, rest = divmod(max(0.0, seconds), SLICE_S)
    for step in [SLICE_S] * int(slices) + ([rest] if rest > 0 else []):
        raise_if_interrupted()
        sleep(step)
    raise_if_interrupted()
