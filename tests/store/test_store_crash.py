"""A writer killed mid-run keeps every committed run and leaves the open one incomplete."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from hilbench.documents import RunStart, RunStop, new_uid
from hilbench.store import Store, StoreWriter

pytestmark = pytest.mark.slow

CHILD = textwrap.dedent(
    """
    import sys, time
    import numpy as np
    from hilbench.documents import *
    from hilbench.store import StoreWriter

    w = StoreWriter(sys.argv[1])
    def run(unit):
        uid = new_uid()
        w(RunStart(uid, "camp", unit, "asc.power", {}, {}, 0.0, time.time(), "0.1.0"))
        phase = new_uid()
        w(PhaseStart(phase, uid, "active", 0.0, {}))
        for i in range(20):
            t = np.arange(100) * 1e-3 + i * 0.1
            w(Samples(uid, phase, "dmm", "W", t, np.full(100, 1.5)))
        return uid, phase
    first, phase = run("first")
    w(PhaseStop(phase, first, 2.0, "success"))
    w(Metric(first, "power.active", 1.5, "W", 0.01))
    w(RunStop(first, 2.1, "success"))
    second, _ = run("second")  # its sample batches sit in an uncommitted transaction
    print(first, second, flush=True)
    time.sleep(60)
    """
)


def test_killed_writer_keeps_finished_run_and_leaves_open_run_incomplete(store_url):
    db_path = store_url
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(db_path)], stdout=subprocess.PIPE, text=True
    )
    try:
        first, second = child.stdout.readline().split()
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
        child.stdout.close()
    assert child.returncode == -signal.SIGKILL

    with Store(db_path) as store:
        assert store.run(first)["status"] == "success"
        assert store.run(second)["status"] == "incomplete"
        t, w = store.samples(first, "dmm")
        assert t.size == 2000 and np.all(w == 1.5)
        assert store.metrics(first)[0]["value"] == 1.5
        assert store.completed_unit_keys("camp") == {"first"}

    # The store is still healthy: a resume marks the unfinished run, then retries its unit.
    with StoreWriter(db_path) as writer:
        assert writer.abort_unfinished_runs("camp", "interrupted: writer killed") == [second]
        retry = new_uid()
        writer(RunStart(retry, "camp", "second", "asc.power", {}, {}, 0.0, 0.0, "0.1.0"))
        writer(RunStop(retry, 1.0, "success"))
    with Store(db_path) as store:
        assert store.completed_unit_keys("camp") == {"first", "second"}
        assert store.run(second)["status"] == "abort"
        assert store.run(second)["reason"] == "interrupted: writer killed"
