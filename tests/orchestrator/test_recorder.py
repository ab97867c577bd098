"""The recorder sees the same ordered document stream as the store."""

from __future__ import annotations

import json

import pytest

from hilbench.orchestrator.campaign import parse_campaign
from hilbench.orchestrator.recorder import JsonlRecorder
from hilbench.orchestrator.runner import CampaignRunner
from hilbench.store import Store

pytestmark = pytest.mark.slow


def test_recorded_documents_match_the_store(tmp_path):
    campaign = parse_campaign({
        "agents": [{"id": "cpu0", "driver": "cpu", "spawn": True}],
        "qubo": [{"nodes": [10], "densities": [0.1], "seeds": [0, 1], "solvers": ["tabu"],
                  "timeouts_s": [0.001]}],
    }, "rec.toml")
    recorder = JsonlRecorder(tmp_path / "docs.jsonl")
    outcome = CampaignRunner(campaign, tmp_path / "r.sqlite", consumers=[recorder]).run()
    recorder.close()
    docs = [json.loads(line) for line in (tmp_path / "docs.jsonl").read_text().splitlines()]
    runs = [d for d in docs if d["kind"] == "run_start"]
    assert [d["uid"] for d in runs] == outcome.run_uids
    for uid in outcome.run_uids:
        kinds = [d["kind"] for d in docs if d.get("run_uid", d.get("uid")) == uid]
        assert kinds[0] == "run_start" and kinds[-1] == "run_stop"
        assert kinds.count("phase_start") == kinds.count("phase_stop") == 2
    with Store(tmp_path / "r.sqlite") as store:
        for uid in outcome.run_uids:
            stored = {m["name"]: m["value"] for m in store.metrics(uid)}
            recorded = {d["name"]: d["value"] for d in docs
                        if d["kind"] == "metric" and d["run_uid"] == uid}
            assert stored == recorded
