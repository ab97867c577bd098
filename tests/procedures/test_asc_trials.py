"""`hilbench run CAMPAIGN --trials N`: every unit N times, the tables apply the 5 % rule."""

from __future__ import annotations

from pathlib import Path

import pytest

from hilbench.store import Store
from tests.campaign_toml import agent, campaign, table, write_campaign
from tests.subprocesses import run_campaign, unit_runs

pytestmark = pytest.mark.slow

CAMPAIGN = campaign(
    agent(),
    table("[[asc]]", agent="cpu0", fixture=True, model="packaged", limit=1),
    name="asc-trials",
)


def test_trials_run_every_unit_n_times_and_the_table_says_so(tmp_path: Path, asc_cache: Path):
    campaign = write_campaign(tmp_path, CAMPAIGN)
    db = tmp_path / "r.sqlite"
    proc = run_campaign(
        campaign,
        db,
        "--trials",
        "2",
        extra_env={"XDG_CACHE_HOME": str(asc_cache), "COLUMNS": "200"},
    )
    assert proc.returncode == 0, proc.stderr
    with Store(db) as store:
        runs = unit_runs(store)
    assert sorted(r["unit_key"].rsplit("/", 1)[-1] for r in runs) == ["rep=0", "rep=1"]
    words = " ".join(proc.stdout.split())
    assert "5-trial rule: 2 trial(s) per figure; the reported figure is their mean" in words
    assert "NeuroBench asks for 5 trials" in words
