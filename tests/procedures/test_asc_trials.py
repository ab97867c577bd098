"""`hilbench run CAMPAIGN --trials N`: every unit N times, the tables apply the 5 % rule."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from hilbench.store import Store

pytestmark = pytest.mark.slow

CAMPAIGN = """
[campaign]
name = "asc-trials"

[[agents]]
id = "cpu0"
driver = "cpu"
spawn = true

[[asc]]
agent = "cpu0"
fixture = true
model = "packaged"
limit = 1
"""


def test_trials_run_every_unit_n_times_and_the_table_says_so(tmp_path: Path, asc_cache: Path):
    campaign = tmp_path / "c.toml"
    campaign.write_text(CAMPAIGN)
    db = tmp_path / "r.sqlite"
    proc = subprocess.run(
        [sys.executable, "-m", "hilbench", "run", str(campaign), "--db", str(db), "-q",
         "--trials", "2"],
        capture_output=True, text=True, timeout=300,
        env={**os.environ, "XDG_CACHE_HOME": str(asc_cache), "COLUMNS": "200"},
    )
    assert proc.returncode == 0, proc.stderr
    with Store(db) as store:
        runs = store.runs()
    assert sorted(r["unit_key"].rsplit("/", 1)[-1] for r in runs) == ["rep=0", "rep=1"]
    assert "trials: 2;" in proc.stdout
    assert "(2 trials" in proc.stdout
