"""RAPL and SoC Watch as campaign instruments: power sources on the orchestrator's timeline."""

from __future__ import annotations

import pytest

from hilbench.cassette.analysis import compare_recording
from hilbench.cassette.bundle import export_bundle
from hilbench.orchestrator.campaign import CampaignError, parse_campaign
from hilbench.orchestrator.runner import CampaignRunner
from hilbench.power.source import InstrumentFault
from hilbench.store import Store
from tests.campaign_toml import TEST_TIMING_ATTEMPTS
from tests.figures import measured, power_again
from tests.power.conftest import FakePowercap
from tests.subprocesses import unit_runs


def campaign(instrument: dict) -> object:
    return parse_campaign({
        "campaign": {"timing_attempts": TEST_TIMING_ATTEMPTS},
        "agents": [{"id": "cpu0", "driver": "cpu", "spawn": True}],
        "qubo": [{"nodes": [10], "densities": [0.1], "seeds": [0], "solvers": ["tabu"],
                  "timeouts_s": [0.5]}],
        "instruments": [{"id": "pkg", "measures": "cpu0", **instrument}],
    }, "internal.toml")


# Not serial: the poller is a thread in this process, and beside the parallel suite it is held
# up (CI-17: 91-95 % of the window "covered" under the meters' rule, no figure). RAPL declares
# that its readings tile time, so a late poll is no lost reading and the figure is kept.
@pytest.mark.slow
def test_rapl_instrument_gives_the_power_its_counters_count(tmp_path):
    fake = FakePowercap(tmp_path / "sys")
    fake.add_zone("intel-rapl:0", "package-0", 0)
    fake.add_zone("intel-rapl:0:2", "dram", 0)
    with fake.drawing({"intel-rapl:0": 30.0, "intel-rapl:0:2": 3.0}):
        spec = campaign({"driver": "rapl",
                         "settings": {"root": str(fake.root), "interval_s": 0.02}})
        outcome = CampaignRunner(spec, tmp_path / "r.sqlite").run()
    assert outcome.completed == 1
    with Store(tmp_path / "r.sqlite") as store:
        run = unit_runs(store)[0]
        power = next(m for m in store.metrics(run["uid"]) if m["name"] == "avg_power_w")
        assert power["meta"]["source"] == "pkg"
        assert measured(power) == pytest.approx(33.0, rel=0.05), power["meta"]
        assert store.sample_sources(run["uid"])[0]["source"] == "pkg"
        # the figure comes back from the stored samples with the coverage rule they carry
        recomputed = power_again(store, run["uid"], "pkg", "W")
        assert recomputed.sample_meta["readings_tile_time"] is True
        assert measured(power) == pytest.approx(recomputed.again.mean_w, rel=1e-12)
    # and an audit bundle of the campaign recomputes every figure from what it carries
    export_bundle(tmp_path / "r.sqlite", outcome.campaign_uid, tmp_path / "bundle")
    comparison = compare_recording(tmp_path / "bundle" / "data")
    assert not comparison.differences and not comparison.not_recomputed, comparison.differences
    assert (run["uid"], "avg_power_w") in comparison.figures


def test_socwatch_instrument_without_the_tool_is_a_clear_error(tmp_path):
    spec = campaign({"driver": "socwatch",
                     "settings": {"executable": "socwatch-not-installed-here"}})
    with pytest.raises(InstrumentFault, match=r"socwatch-not-installed-here.*not found on PATH"):
        CampaignRunner(spec, tmp_path / "s.sqlite").run()


def test_unknown_instrument_settings_are_refused_by_name_when_the_campaign_loads():
    where = r"internal.toml \[\[instruments\]\] #1 settings: "
    with pytest.raises(CampaignError, match=where + ".*intervall_s"):
        campaign({"driver": "rapl", "settings": {"intervall_s": 0.1}})
