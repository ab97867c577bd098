"""A run stores its gap to the official target and to the best-known value, with provenance."""

from __future__ import annotations

import numpy as np
import pytest

from hilbench.store import Store
from hilbench.workloads.qubo.best_known import BestKnownStore
from tests.campaign_toml import agent, campaign, qubo, write_campaign
from tests.figures import measured
from tests.subprocesses import run_campaign, unit_runs

pytestmark = pytest.mark.slow

CAMPAIGN = campaign(
    agent(), qubo(nodes=[25], seeds=[0, 1], solvers=["anytime"]), name="gaps"
)


def test_runs_store_the_gap_to_both_targets(tmp_path):
    book = tmp_path / "bk.json"
    weak = np.zeros(25, dtype=np.uint8)
    weak[0] = 1  # a one-node set: a poor best-known value, so the runs beat it
    BestKnownStore(book).offer(25, 0.1, 0, weak, {"solver": "test", "by": "this test"})
    path = write_campaign(tmp_path, CAMPAIGN)
    db = tmp_path / "r.sqlite"
    proc = run_campaign(path, db, timeout=180, extra_env={"HILBENCH_BEST_KNOWN": str(book)})
    assert proc.returncode == 0, proc.stderr
    with Store(db) as store:
        runs = {run["params"]["seed"]: run for run in unit_runs(store)}
        known = {s: {m["name"]: m for m in store.metrics(r["uid"])} for s, r in runs.items()}
    assert runs[0]["params"]["best_known"] == -1
    assert runs[0]["params"]["best_known_provenance"]["by"] == "this test"
    seed0 = known[0]
    assert measured(seed0["bks_gap"]) == 0.0  # n=25: the exact optimum is the official target
    cost = seed0["cost"]["value"]
    assert measured(seed0["best_known_gap"]) == (cost + 1) / 1  # far below the weak record
    assert known[1]["best_known_gap"]["value"] is None  # nothing recorded for seed 1
    assert "no best-known value" in known[1]["best_known_gap"]["meta"]["reason"]
