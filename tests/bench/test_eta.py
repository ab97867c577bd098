"""The campaign ETA: what it rests on, that `run`, the daemon and `bench eta` share it, and that
`hilbench bench eta` measures its error over a store's recorded campaigns."""

from __future__ import annotations

import re

import msgspec
import pytest
import tomllib

from hilbench import __version__
from hilbench.bench.eta import replay_store, unit_budgets
from hilbench.daemon.messages import CampaignStarted, Report, UnitEnded
from hilbench.daemon.progress import CampaignProgress
from hilbench.documents import RunStart, RunStop, new_uid
from hilbench.orchestrator.campaign import parse_campaign
from hilbench.orchestrator.eta import (
    OVERHEAD_PER_RUN_S,
    Estimator,
    plan_entries,
    store_history,
    unit_shape,
)
from hilbench.orchestrator.procedure import expand_all
from hilbench.store import StoreWriter
from tests.campaign_toml import agent, campaign, qubo
from tests.subprocesses import hilbench

TIMEOUTS = [0.001, 0.01, 0.1, 1.0]


def _campaign(**keys):
    return parse_campaign(tomllib.loads(campaign(agent(), qubo(**keys), name="eta")), "eta.toml")


def _units(**keys):
    return expand_all(_campaign(**keys))


def test_model_counts_each_timeout_and_the_overhead_measured_so_far():
    """The daemon said 13 s at 3 of 180 units (the mean of three 1 ms units × 177) where the
    campaign took 54 s: the model counts each unit's own timeout plus the overhead measured."""
    units = _units(nodes=[10], seeds=[0, 1, 2], timeouts_s=TIMEOUTS)
    units.sort(key=lambda u: u.timeout_s)  # the three 1 ms units first
    estimator = Estimator.for_units(units, {})
    first = estimator.estimate()
    assert first.seconds == pytest.approx(3 * sum(TIMEOUTS) + len(units) * OVERHEAD_PER_RUN_S)
    assert "model: timeout + overhead 15 ms per unit assumed" in first.basis
    for i, unit in enumerate(units[:3]):
        estimator.done(unit_shape(unit), None if i == 0 else 0.021)
    estimate = estimator.estimate()
    left = units[3:]
    # The 1 ms shape has its own runs (2 measured: not yet trusted), so all 9 left are modelled.
    assert estimate.seconds == pytest.approx(sum(u.timeout_s for u in left) + len(left) * 0.020)
    assert estimate.basis == ("9 unit(s) model: timeout + overhead 20 ms per unit measured over "
                              "2 run(s)")
    assert estimate.short() == "~4 s left (9 model)"


def test_own_runs_then_stored_runs_of_the_same_shape_come_before_the_model(tmp_path):
    db = tmp_path / "s.sqlite"
    units = _units(nodes=[10], seeds=[0, 1, 2, 3], timeouts_s=[0.01, 0.1])
    with StoreWriter(db) as writer:  # an earlier campaign: the 0.1 s units took 0.5 s each
        _write(writer, "earlier", [(str(u.key), 0.5) for u in units if u.timeout_s == 0.1])
    estimator = Estimator.for_units(units, store_history(db))
    short = [u for u in units if u.timeout_s == 0.01]
    for i, unit in enumerate(short):
        estimator.done(unit_shape(unit), None if i == 0 else 0.2)
    estimate = estimator.estimate()
    assert estimate.seconds == pytest.approx(4 * 0.5)
    assert estimate.basis == "4 unit(s) from 3 stored run(s) of the same unit shape"
    for unit in [u for u in units if u.timeout_s == 0.1][:3]:  # its own three count now
        estimator.done(unit_shape(unit), 0.3)
    assert estimator.estimate().seconds == pytest.approx(1 * 0.3)
    assert estimator.estimate().short() == "~300 ms left (1 measured)"
    assert "from 3 run(s) of this campaign of the same unit shape" in estimator.estimate().basis
    estimator.done(unit_shape(units[-1]), 0.3)
    assert estimator.estimate().short() == "" and estimator.estimate().basis == "nothing left"


def test_a_unit_without_budget_or_history_is_unknown_until_runs_were_seen():
    units = _units(nodes=[10], seeds=[0, 1], timeouts_s=[0.1])
    estimator = Estimator.for_units(units, {})
    estimator.budgets = dict.fromkeys(estimator.budgets)  # as ASC units: no stated budget
    assert estimator.estimate().seconds is None
    assert estimator.estimate().text().startswith("ETA unknown (2 unit(s) nothing known yet")
    estimator.done(unit_shape(units[0]), 4.0)
    assert estimator.estimate().seconds == pytest.approx(4.0)
    assert "this campaign's mean over 1 run(s)" in estimator.estimate().basis


def test_the_daemon_estimates_from_the_workers_plan_as_run_does():
    """The worker's plan crosses the pipe as a typed message; the daemon's ETA is the same
    estimator's, fed by the units' report times (slots, overhead included)."""
    units = _units(nodes=[10], seeds=[0, 1, 2], timeouts_s=TIMEOUTS)
    units.sort(key=lambda u: u.timeout_s)
    plan = plan_entries(units, {})
    started = CampaignStarted(uid="c1", total=len(units), done=0, plan=plan, message="")
    line = msgspec.json.encode(started)
    progress = CampaignProgress(item_id=1, name="eta")
    progress.on_campaign(msgspec.json.decode(line, type=Report))
    for i, unit in enumerate(units[:3]):
        progress.on_unit(UnitEnded(key=str(unit.key), procedure=unit.procedure, run_uid="r",
                                   status="success", duration_s=0.002, t=100.0 + 0.025 * i))
    eta_s, basis = progress.eta()
    left = units[3:]
    assert eta_s == pytest.approx(sum(u.timeout_s for u in left) + len(left) * 0.024)
    assert basis.startswith("9 unit(s) model: timeout + overhead 24 ms per unit measured")
    assert progress.to_dict()["eta_basis"] == basis


def test_budgets_are_rebuilt_from_a_stored_campaign_config():
    config = _campaign(nodes=[10], seeds=[0], timeouts_s=[0.01, 0.1]).config_dict()
    budgets = unit_budgets(msgspec.json.decode(msgspec.json.encode(config)))
    assert sorted(budgets.values()) == [0.01, 0.1]
    assert unit_budgets({"tables": {"nonesuch": [{}]}}) == {}


def _write(writer, name, units, *, wall0=1_000_000.0, config=None, pause_after=None,
           ended=True):
    """One campaign of runs (unit key, slot s) back to back; each run lasts 80 % of its slot;
    ``pause_after``: index after which the campaign stood 1000 s (a stop and a resume)."""
    uid = new_uid()
    writer.begin_campaign(uid, name, config or {"name": name})
    t = wall = wall0
    for i, (key, slot) in enumerate(units):
        run = new_uid()
        start = t + 0.2 * slot
        writer(RunStart(run, uid, key, "qubo.fixed_timeout", {}, {"cpu0": {"driver": "cpu"}},
                        start, wall + (start - t), __version__))
        t += slot
        wall += slot
        writer(RunStop(run, t, "success"))
        if i == pause_after:
            wall += 1000.0
    if ended:
        writer.end_campaign(uid, "success")
    return wall


def test_bench_eta_replays_each_campaign_with_the_history_it_had(tmp_path):
    """Two shapes: 20 short units then 20 long ones. The first campaign has no history and no
    budgets (its config is not one hilbench can rebuild): its ETA from its own mean is far off
    until it has seen three long ones.
    The second and third know the first (and second): exact; the third's pause is not counted."""
    db = tmp_path / "h.sqlite"
    keys = [(f"qubo/fixed_timeout/n=10/d=0.1/seed={s}/sa/timeout={t}/rep=0", slot)
            for t, slot in (("0.01", 0.05), ("1", 1.5)) for s in range(20)]
    with StoreWriter(db) as writer:
        end = _write(writer, "first", keys)
        end = _write(writer, "second", keys, wall0=end + 10)
        end = _write(writer, "third", keys, wall0=end + 10, pause_after=25)
        _write(writer, "running", keys[:30], wall0=end + 10, ended=False)  # not replayed
    replays = replay_store(db)
    assert [r.name for r in replays] == ["first", "second", "third"]
    assert [r.history_runs for r in replays] == [0, 40, 80]
    assert all(len(r.errors) == 36 for r in replays)  # from the 4th of 40 runs to the 39th
    assert replays[0].errors[0] > 0.5  # 20 long units estimated at the short ones' mean
    assert replays[0].errors[-1] == pytest.approx(0.0, abs=1e-9)  # its own long runs counted
    assert max(replays[1].errors) == pytest.approx(0.0, abs=1e-9)
    assert max(replays[2].errors) == pytest.approx(0.0, abs=1e-9)
    proc = hilbench("bench", "eta", db)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert re.match(r"campaign \w{8} second: 40 run\(s\), history 40 run\(s\): median 0\.0 %, "
                    r"90th percentile 0\.0 % over 36 ETA\(s\)$", lines[1]), lines
    assert lines[-1].startswith("ETA error after the first tenth, all 3 campaign(s): median ")
    assert lines[-1].endswith("over 108 ETA(s) (goal: median ≤ 20 %)")


def test_bench_eta_names_a_store_without_runs(tmp_path):
    db = tmp_path / "empty.sqlite"
    StoreWriter(db).close()
    proc = hilbench("bench", "eta", db)
    assert proc.returncode == 1
    assert proc.stderr.strip() == f"Error: {db}: no campaign that ran to its end to replay"
