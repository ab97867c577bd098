"""Documents written through StoreWriter read back unchanged through Store."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from hilbench.documents import (
    Event,
    Metric,
    PhaseStart,
    PhaseStop,
    RunStart,
    RunStop,
    Samples,
    new_uid,
)
from hilbench.store import Store, StoreError, StoreWriter


def test_a_full_run_reads_back_as_written(store_url, begin_run):
    rng = np.random.default_rng(1)
    meter_t = [np.sort(rng.uniform(0, 10, 300)) for _ in range(3)]
    meter_w = [rng.normal(1.0, 0.1, 300) for _ in range(3)]
    with StoreWriter(store_url) as writer:
        run = begin_run(writer, params={"nodes": np.int64(25), "density": 0.05, "seed": 3})
        idle, active = new_uid(), new_uid()
        writer(PhaseStart(idle, run, "idle", 100.0, {"a1": {"offset_s": 1e-4, "rtt_s": 2e-4}}))
        writer(Samples(run, idle, "dmm", "W", meter_t[0], meter_w[0], {"range": "auto"}))
        writer(PhaseStop(idle, run, 110.0, "success"))
        writer(PhaseStart(active, run, "active", 110.0, {}))
        writer(Event(run, active, "issued", 110.1, {"sample": 0}))
        writer(Samples(run, active, "dmm", "W", meter_t[1], meter_w[1]))
        writer(Samples(run, active, "rapl", "W", meter_t[2], meter_w[2]))
        writer(Event(run, active, "done", 110.2, {"sample": 0, "label": 3}))
        writer(Event(run, None, "note", 111.0, {"text": "between phases"}))
        writer(PhaseStop(active, run, 120.0, "fail", "meter overrange"))
        writer(Metric(run, "power.idle", 1.01, "W", 0.02, {"window_s": 10}))
        writer(Metric(run, "energy", None, "J"))
        writer(RunStop(run, 121.0, "success"))

    with Store(store_url) as store:
        stored = store.run(run)
        assert stored["status"] == "success"
        assert stored["params"] == {"nodes": 25, "density": 0.05, "seed": 3}
        assert stored["agents"] == {"cpu@host": {"driver": "cpu"}}
        assert stored["duration_s"] == pytest.approx(21.0)

        phases = store.phases(run)
        assert [(p["name"], p["status"], p["reason"]) for p in phases] == [
            ("idle", "success", ""),
            ("active", "fail", "meter overrange"),
        ]
        assert phases[0]["clock_offsets"]["a1"]["rtt_s"] == 2e-4

        assert [e["name"] for e in store.events(run)] == ["issued", "done", "note"]
        done = store.events(run, name="done")
        assert done == [
            {
                "run_uid": run,
                "phase_uid": active,
                "name": "done",
                "t": 110.2,
                "data": {"sample": 0, "label": 3},
            }
        ]
        assert store.event_counts(run) == {"done": 1, "issued": 1, "note": 1}

        t, w = store.samples(run, "dmm")
        np.testing.assert_array_equal(t, np.concatenate(meter_t[:2]))
        np.testing.assert_array_equal(w, np.concatenate(meter_w[:2]))
        t_idle, _ = store.samples(run, "dmm", phase_uid=idle)
        np.testing.assert_array_equal(t_idle, meter_t[0])
        sources = {s["source"]: s for s in store.sample_sources(run)}
        assert sources["dmm"]["n"] == 600 and sources["dmm"]["batches"] == 2
        assert sources["rapl"]["t_last"] == meter_t[2][-1]
        first_batch = next(store.sample_batches(run, "dmm"))
        assert first_batch["meta"] == {"range": "auto"}

        metrics = {m["name"]: m for m in store.metrics(run)}
        assert metrics["power.idle"]["value"] == 1.01
        assert metrics["power.idle"]["uncertainty"] == 0.02
        assert metrics["power.idle"]["meta"] == {"window_s": 10}
        assert metrics["energy"]["value"] is None


def test_samples_without_a_source_name_need_exactly_one_source(store_url, begin_run):
    with StoreWriter(store_url) as writer:
        run = begin_run(writer)
        writer(Samples(run, None, "dmm", "W", np.arange(3.0), np.ones(3)))
        writer(Samples(run, None, "rapl", "W", np.arange(3.0), np.ones(3)))
        single = begin_run(writer, unit_key="other")
        writer(Samples(single, None, "dmm", "W", np.arange(4.0), np.ones(4)))
    with Store(store_url) as store:
        with pytest.raises(StoreError, match=r"2 sources.*dmm, rapl"):
            store.samples(run)
        with pytest.raises(StoreError, match="no samples from source 'fpga'"):
            store.samples(run, "fpga")
        t, _ = store.samples(single)
        assert t.size == 4


def test_a_run_without_run_stop_reads_back_incomplete(store_url, begin_run):
    with StoreWriter(store_url) as writer:
        run = begin_run(writer)
        phase = new_uid()
        writer(PhaseStart(phase, run, "solve", 100.0, {}))
        writer(Event(run, phase, "issued", 100.1, {}))
    with Store(store_url) as store:
        assert store.run(run)["status"] == "incomplete"
        assert store.run(run)["duration_s"] is None
        assert store.phases(run)[0]["status"] == "incomplete"
        assert store.event_counts(run) == {"issued": 1}


def test_only_successful_units_count_as_completed(store_url, full_run):
    with StoreWriter(store_url) as writer:
        full_run(writer, "camp", "unit-a")
        full_run(writer, "camp", "unit-b", exit_status="fail", reason="agent lost")
        full_run(writer, "camp", "unit-c", exit_status="abort", reason="meter unreachable")
        full_run(writer, "other", "unit-d")
        writer(RunStart(new_uid(), "camp", "unit-e", "x", {}, {}, 0.0, 0.0, "0"))  # no stop
    with Store(store_url) as store:
        assert store.completed_unit_keys("camp") == {"unit-a"}
        failed = next(r for r in store.runs("camp") if r["unit_key"] == "unit-b")
        assert (failed["status"], failed["reason"]) == ("fail", "agent lost")
        assert len(store.runs()) == 5 and len(store.runs("camp")) == 4


def test_a_unit_that_succeeded_is_not_stored_twice_but_a_failed_one_may_be_retried(
    store_url, full_run
):
    with StoreWriter(store_url) as writer:
        full_run(writer, "camp", "retry-me", exit_status="fail", reason="timeout")
        full_run(writer, "camp", "retry-me")
        with pytest.raises(StoreError, match=r"'retry-me'.*already completed"):
            full_run(writer, "camp", "retry-me")
    with Store(store_url) as store:
        assert [r["status"] for r in store.runs("camp")] == ["fail", "success"]


def test_documents_that_would_corrupt_the_record_are_refused(store_url, begin_run):
    with StoreWriter(store_url) as writer:
        run = begin_run(writer)
        phase = new_uid()
        writer(PhaseStart(phase, run, "solve", 100.0, {}))
        writer(Metric(run, "gap", 0.1, ""))
        with pytest.raises(StoreError, match=r"metric 'gap'.*already stored"):
            writer(Metric(run, "gap", 0.2, ""))
        with pytest.raises(StoreError, match="never started"):
            writer(Event(run, "no-such-phase", "x", 1.0, {}))
        with pytest.raises(StoreError, match="equal length"):
            writer(Samples(run, phase, "dmm", "W", np.arange(3.0), np.ones(2)))
        with pytest.raises(StoreError, match="exit status 'ok'"):
            writer(PhaseStop(phase, run, 101.0, "ok"))
        writer(PhaseStop(phase, run, 101.0, "success"))
        with pytest.raises(StoreError, match="already stopped"):
            writer(PhaseStop(phase, run, 102.0, "success"))
        writer(RunStop(run, 103.0, "success"))
        with pytest.raises(StoreError, match="not open"):
            writer(Event(run, None, "late", 104.0, {}))
        with pytest.raises(StoreError, match="not JSON serialisable"):
            begin_run(writer, unit_key="bad", params={"callback": print})
    with Store(store_url) as store:
        assert [m["value"] for m in store.metrics(run)] == [0.1]
        assert store.events(run) == []


def test_campaigns_are_recorded_ended_and_resumed(store_url, full_run):
    with StoreWriter(store_url) as writer:
        writer.begin_campaign("c-1", "qubo sweep", {"nodes": [10, 25], "timeouts": [0.01]})
        full_run(writer, "c-1", "u1")
    with Store(store_url) as store:
        (campaign,) = store.campaigns()
        assert campaign["status"] == "incomplete" and campaign["n_runs"] == 1
    with StoreWriter(store_url) as writer:
        writer.begin_campaign("c-1", "qubo sweep", {"nodes": [10, 25, 50], "timeouts": [0.01]})
        writer.end_campaign("c-1", "success")
        with pytest.raises(StoreError, match="never begun"):
            writer.end_campaign("c-2", "success")
    with Store(store_url) as store:
        campaign = store.campaign("c-1")
        assert campaign["status"] == "success"
        assert campaign["resumes"] == 1
        assert campaign["config"]["nodes"] == [10, 25, 50]


def test_run_ids_resolve_from_a_unique_prefix(store_url, full_run):
    with StoreWriter(store_url) as writer:
        uids = [full_run(writer, "camp", f"u{i}") for i in range(20)]
    with Store(store_url) as store:
        assert store.find_run(uids[0][:12])["uid"] == uids[0]
        with pytest.raises(StoreError, match="ambiguous"):
            store.find_run(_common_prefix(uids))
        with pytest.raises(StoreError, match="no run matching 'zz'"):
            store.find_run("zz")
        assert store.resolve_campaign_uid("ca") == "camp"


def _common_prefix(uids: list[str]) -> str:
    """A one-character prefix shared by at least two uids (20 hex uids always have one)."""
    firsts = [u[0] for u in uids]
    return next(c for c in firsts if firsts.count(c) > 1)


def test_a_reader_sees_a_run_whole_at_its_stop_while_the_writer_is_mid_transaction(
    store_url, begin_run
):
    writer = StoreWriter(store_url, commit_interval_s=3600)
    try:
        run = begin_run(writer)
        phase = new_uid()
        writer(PhaseStart(phase, run, "solve", 100.0, {}))
        writer(Samples(run, phase, "dmm", "W", np.arange(5.0), np.ones(5)))  # not yet committed
        writer(PhaseStop(phase, run, 101.0, "success"))  # streamed: within the interval
        writer(Metric(run, "power", 1.0, "W"))
        with Store(store_url) as reader:
            assert reader.run(run)["status"] == "incomplete"
            assert [p["status"] for p in reader.phases(run)] == ["incomplete"]  # its start
            assert reader.sample_sources(run) == []
            assert reader.metrics(run) == []
            writer(RunStop(run, 102.0, "success"))  # commits the run whole
            assert reader.run(run)["status"] == "success"
            assert reader.sample_sources(run)[0]["n"] == 5
            assert [p["status"] for p in reader.phases(run)] == ["success"]
            assert [m["name"] for m in reader.metrics(run)] == ["power"]
            writer.flush()
    finally:
        writer.close()


def test_documents_may_arrive_from_another_thread(store_url, begin_run):
    with StoreWriter(store_url) as writer:
        run = begin_run(writer)

        def emit_rest_of_run() -> None:
            for i in range(5):
                writer(Event(run, None, "tick", float(i), {}))
            writer(RunStop(run, 9.0, "success"))

        worker = threading.Thread(target=emit_rest_of_run)
        worker.start()
        worker.join()
    with Store(store_url) as store:
        assert store.run(run)["status"] == "success"
        assert store.event_counts(run) == {"tick": 5}
