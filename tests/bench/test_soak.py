"""A short `hilbench bench soak`: the daemon and an agent SIGKILLed mid-queue, every unit of
every queued campaign exactly once afterwards."""

from __future__ import annotations

import re

import pytest

from tests.subprocesses import hilbench


# Not serial: it holds no time, rate or power to a bound (its figures are printed, not held),
# and a unit a loaded host leaves unverified is counted, not lost. Alone it kept the suite's
# other workers idle for 18-23 s.
@pytest.mark.timeout(900)  # the soak, given 600 s
@pytest.mark.slow
def test_short_soak_loses_and_duplicates_nothing(tmp_path):
    out = hilbench("bench", "soak", "--units", "120", "--campaigns", "2", "--fires", "0",
                   "--daemon-kills", "1", "--agent-kills", "1", "--dir", tmp_path, timeout=600)
    assert out.returncode == 0, out.stderr
    assert "kills: daemon 1, agent 1 (SIGKILL)" in out.stdout
    figures = re.search(r"units done (\d+), ended unverified (\d+), retried (\d+), lost (\d+), "
                        r"duplicated (\d+); items not completed: none", out.stdout)
    assert figures, out.stdout
    done, unverified, retried, lost, duplicated = map(int, figures.groups())
    # A unit whose 1 ms timing could not be confirmed in its attempts on a busy host ends
    # unverified, stored with that status (CI: 2 of 120 beside the other tests): accounted
    # for, not lost. Most are confirmed.
    assert done + unverified >= 120 and lost == 0 and duplicated == 0, out.stdout
    assert unverified <= 12, out.stdout
    assert retried >= 1  # the agent's kill cut a run short; it was run again
    # every figure the must-hold names is printed: RSS, status latency, throughput per tenth
    # (a soak this short may end before an incarnation has done the 50 units RSS waits for)
    assert re.search(r"daemon RSS: ([\d.]+|nan) MiB at start .*, ([\d.]+|nan) -> [\d.]+ MiB",
                     out.stdout), out.stdout
    assert re.search(r"status over the control socket: \d+ asks, .* p99 [\d.]+ ms", out.stdout)
    left_out = re.search(r"time left out of throughput: (\d+) s idle .*, (\d+) s of outage over "
                         r"(\d+) SIGKILL", out.stdout)
    assert left_out and int(left_out[3]) == 2, out.stdout  # one daemon, one agent kill
    assert re.search(r"first tenth [\d.]+, last tenth [\d.]+ \(\d+ % of first\)", out.stdout)


def test_throughput_leaves_out_waits_for_a_schedule_and_restart_outages():
    from hilbench.bench.daemon_harness import throughput

    # 50 units/s throughout: 500 units of a queued item, a kill whose restart takes 4 s, then
    # the queue runs dry for 30 s until a schedule fire queues 30 more units.
    done = [i * 0.02 for i in range(300)]
    done += [done[-1] + 4.0 + i * 0.02 for i in range(200)]
    fired_at = done[-1] + 30.0
    done += [fired_at + 0.02 * (i + 1) for i in range(30)]
    work = [(-1.0, done[499] + 0.001), (fired_at, done[-1] + 0.01)]
    speed = throughput(done, work, kills=[done[299] + 1.0])
    assert speed.tenth == 53
    assert speed.first == pytest.approx(50.0) and speed.last == pytest.approx(50.0, rel=0.01)
    assert speed.outages == 1 and speed.outage_s == pytest.approx(4.0)
    assert speed.idle_s == pytest.approx(30.0 - 0.001, abs=1e-6)
    # Counting the wait as the daemon's time would put the last tenth at under 2 units/s.
    assert throughput(done, [(-1.0, done[-1])], kills=[]).last < 2.0
