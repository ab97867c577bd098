"""A short `hilbench bench soak`: the daemon and an agent SIGKILLed mid-queue, every unit of
every queued campaign exactly once afterwards."""

from __future__ import annotations

import re

import pytest

from tests.subprocesses import hilbench


@pytest.mark.slow
def test_short_soak_loses_and_duplicates_nothing(tmp_path):
    out = hilbench("bench", "soak", "--units", "120", "--campaigns", "2", "--fires", "0",
                   "--daemon-kills", "1", "--agent-kills", "1", "--dir", tmp_path, timeout=600)
    assert out.returncode == 0, out.stderr
    assert "kills: daemon 1, agent 1 (SIGKILL)" in out.stdout
    figures = re.search(r"units done (\d+), retried (\d+), lost (\d+), duplicated (\d+); "
                        r"items not completed: none", out.stdout)
    assert figures, out.stdout
    done, retried, lost, duplicated = map(int, figures.groups())
    assert done >= 120 and lost == 0 and duplicated == 0
    assert retried >= 1  # the agent's kill cut a run short; it was run again
