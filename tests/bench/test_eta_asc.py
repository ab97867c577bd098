"""The ETA of an ASC campaign with no history of the same work: a model from what its tables
declare (power windows: repetitions × (idle + active) seconds; a single stream: a pass over the
test samples whose per-sample cost is measured once the first run ends). Issue 34 saw "about
30 ms" for a campaign that took 24 s."""

from __future__ import annotations

import msgspec
import pytest
import tomllib

from hilbench import __version__
from hilbench.bench.eta import declared, replay_store
from hilbench.documents import RunStart, RunStop, new_uid
from hilbench.orchestrator.campaign import parse_campaign
from hilbench.orchestrator.eta import OVERHEAD_PER_RUN_S, Estimator, UnitWork, unit_shape
from hilbench.orchestrator.procedure import expand_all
from hilbench.store import StoreWriter
from tests.campaign_toml import agent, campaign, table
from tests.subprocesses import hilbench

IDLE_S, ACTIVE_S, WINDOWS = 5.0, 5.0, 2  # examples/asc-cpu.toml's windows
TRIALS = 3


def _campaign(method: str = "single_stream"):
    text = campaign(agent(), table("[[asc]]", agent="cpu0", fixture=True, power=True,
                                   power_method=method, idle_s=IDLE_S, active_s=ACTIVE_S,
                                   repetitions=WINDOWS), name="asc-eta", repetitions=TRIALS)
    return parse_campaign(tomllib.loads(text), "asc-eta.toml")


def test_power_runs_are_their_declared_windows_and_a_single_stream_waits_for_its_cost():
    units = expand_all(_campaign())
    power = [u for u in units if u.procedure == "asc.power"]
    single = [u for u in units if u.procedure == "asc.single_stream"]
    assert len(power) == len(single) == TRIALS
    windows = WINDOWS * (IDLE_S + ACTIVE_S)  # one idle and one single-stream window each
    assert all(u.work() == UnitWork(windows, 0) for u in power)
    assert all(u.work() == UnitWork(0.0, None) for u in single)  # the data is not loaded yet
    estimator = Estimator.for_units(units, {})
    first = estimator.estimate()
    assert first.seconds is None  # not "about 30 ms": the single streams are not known yet
    assert first.text() == (
        "ETA unknown (3 unit(s) declared samples whose per-sample cost is measured once the "
        "first run ends; 3 unit(s) model: 60 s of declared windows + a pass over the data as "
        "measured over 0 run(s) + overhead 15 ms per unit assumed, none measured yet)")
    # The first unit, a single stream, ran 0.9 s after a start-up its slot would include.
    estimator.done(unit_shape(single[0]), None, 0.9)
    after = estimator.estimate()
    assert after.seconds == pytest.approx(2 * 0.9 + 3 * (windows + OVERHEAD_PER_RUN_S))
    assert after.short() == "~62 s left (5 model)"
    # A power run's slot measures the overhead beside its windows.
    estimator.done(unit_shape(power[0]), windows + 1.5)
    assert estimator.estimate().seconds == pytest.approx(2 * 0.9 + 2 * (windows + 1.5))
    assert "+1500 ms per unit beside the windows measured over 1 run(s)" in (
        estimator.estimate().basis)


def test_a_device_that_times_fewer_stages_than_declared_is_measured_after_its_first_run():
    """The Arduino method declares an active window per stage; a device that can time only
    inference (Xylo Audio 2: its analog front end is not timed) runs one per repetition: the
    first power run's slot says so, and the next power run is estimated from it."""
    units = expand_all(_campaign("repeat"))
    power = [u for u in units if u.procedure == "asc.power"]
    declared_s = power[0].work().fixed_s
    ran_s = WINDOWS * (IDLE_S + ACTIVE_S) + 0.4  # one active window per repetition
    estimator = Estimator.for_units(power, {})
    estimator.done(unit_shape(power[0]), None, ran_s - 0.4)
    assert estimator.estimate().seconds == pytest.approx(2 * (declared_s + OVERHEAD_PER_RUN_S))
    estimator.done(unit_shape(power[1]), ran_s)
    assert estimator.estimate().seconds == pytest.approx(ran_s)
    assert "−9600 ms per unit beside the windows measured over 1 run(s)" in (
        estimator.estimate().basis)


def test_the_arduino_method_counts_an_active_window_per_stage():
    power = [u for u in expand_all(_campaign("repeat")) if u.procedure == "asc.power"]
    assert power[0].work() == UnitWork(WINDOWS * (IDLE_S + 2 * ACTIVE_S), 0)


def test_once_the_data_is_loaded_the_model_counts_samples():
    units = expand_all(_campaign())
    single = [u for u in units if u.procedure == "asc.single_stream"]
    single[0].resources.test = [None] * 400  # what prepare() loads: 400 test samples
    estimator = Estimator.for_units(units, {})
    estimator.done(unit_shape(single[0]), None, 2.0)
    estimate = estimator.estimate()
    assert estimate.seconds == pytest.approx(2 * 2.0 + 3 * (20.0 + OVERHEAD_PER_RUN_S))
    assert "800 sample(s) × 5 ms per sample measured over 1 run(s)" in estimate.basis


def _write_asc_campaign(writer, config, wall0, single_s, overhead_s, power_s):
    """One ASC campaign as `run` stores it: per trial a single stream, then a power run."""
    uid = new_uid()
    writer.begin_campaign(uid, config["name"], config)
    budgets, units = declared(config)
    assert not budgets and len(units) == 2 * TRIALS  # rebuilt from the stored config
    t = wall0 + 5.0  # start-up: agent, fixture, model
    for key, unit in units.items():
        work = unit.work()
        procedure = "asc.power" if work.samples == 0 else "asc.single_stream"
        seconds = power_s if work.samples == 0 else single_s
        run = new_uid()
        writer(RunStart(run, uid, key, procedure, {}, {"cpu0": {"driver": "cpu"}}, t, t,
                        __version__))
        writer(RunStop(run, t + seconds, "success"))
        t += seconds + overhead_s
    writer.end_campaign(uid, "success")
    return t


def test_bench_eta_on_asc_campaigns_without_history_is_within_the_goal(tmp_path):
    """Each campaign in its own store (no history of the same work): from the first tenth on
    (its first run), the model's ETAs against what the rest really took. The runs' times are
    those measured for examples/asc-cpu.toml on the 2-core VM: single stream 0.89 s, a power
    run 21.8 s for 20 s of windows, about 0.1 s between runs."""
    config = msgspec.json.decode(msgspec.json.encode(_campaign().config_dict()))
    db = tmp_path / "asc.sqlite"
    with StoreWriter(db) as writer:
        _write_asc_campaign(writer, config, 1_000_000.0, 0.89, 0.1, 21.8)
    [replay] = replay_store(db)
    assert len(replay.errors) == 2 * TRIALS - 1  # after each run but the last
    assert max(replay.errors) < 0.2, replay.errors
    proc = hilbench("bench", "eta", db)
    assert proc.returncode == 0, proc.stderr
    assert "(goal: median ≤ 20 %)" in proc.stdout


def test_a_device_that_times_only_inference_is_modelled_with_the_windows_it_will_run():
    """Its handshake, stored with the campaign's first run, says which stages it can time
    (Xylo Audio 2: inference only): from then on its power runs count one active window per
    repetition, before any of them ran."""
    power = [u for u in expand_all(_campaign("repeat")) if u.procedure == "asc.power"]
    estimator = Estimator.for_units(power, {})
    per_unit = WINDOWS * (IDLE_S + 2 * ACTIVE_S) + OVERHEAD_PER_RUN_S
    assert estimator.estimate().seconds == pytest.approx(TRIALS * per_unit)
    estimator.learn({"cpu0": {"driver": "xylo",
                              "capabilities": {"asc": {"stages": ["inference"]}}}})
    per_unit = WINDOWS * (IDLE_S + ACTIVE_S) + OVERHEAD_PER_RUN_S
    assert estimator.estimate().seconds == pytest.approx(TRIALS * per_unit)
    estimator.learn({"cpu0": {"capabilities": {"asc": {"stages": "garbled"}}}})  # unreadable
    garbled = power[0].work(estimator.capabilities["cpu0"])
    assert garbled.fixed_s == WINDOWS * (IDLE_S + 2 * ACTIVE_S)  # both stages, as declared
