"""pandas views: one row per run with params and metrics side by side; samples as columns."""

from __future__ import annotations

import sys

import numpy as np
import pytest

from hilbench.documents import Metric, RunStop, Samples
from hilbench.store import Store, StoreWriter
from hilbench.store.frames import metrics_frame, runs_frame, samples_frame

pd = pytest.importorskip("pandas")


def _sweep(store_url, begin_run):
    """Three QUBO runs at two sizes; the failed one has no energy metric."""
    with StoreWriter(store_url) as writer:
        for nodes, gap, status in ((10, 0.0, "success"), (25, 0.04, "success"), (25, None, "fail")):
            run = begin_run(writer, unit_key=f"{nodes}/{status}", params={"nodes": nodes})
            writer(Metric(run, "bks_gap", gap, "", 0.01 if gap is not None else None))
            if status == "success":
                writer(Metric(run, "energy", nodes * 0.1, "J", 0.002))
            writer(RunStop(run, 200.0, status, "" if status == "success" else "agent lost"))


def test_metrics_frame_has_one_row_per_run_with_params_and_metrics(store_url, begin_run):
    _sweep(store_url, begin_run)
    frame = metrics_frame(store_url)
    assert len(frame) == 3
    ok = frame[frame["status"] == "success"]
    mean_gap = ok.groupby("param.nodes")["bks_gap"].mean()
    assert mean_gap.to_dict() == {10: 0.0, 25: 0.04}
    assert frame.loc[frame["status"] == "fail", "energy"].isna().all()
    assert frame["energy.uncertainty"].dropna().tolist() == [0.002, 0.002]
    assert frame.attrs["units"] == {"bks_gap": "", "energy": "J"}


def test_runs_frame_filters_by_campaign(store_url, begin_run):
    _sweep(store_url, begin_run)
    with StoreWriter(store_url) as writer:
        begin_run(writer, campaign_uid="other", params={"clip": "a.wav"})
    assert len(runs_frame(store_url)) == 4
    other = runs_frame(store_url, campaign_uid="other")
    assert other["param.clip"].tolist() == ["a.wav"]
    assert other["status"].tolist() == ["incomplete"]


def test_samples_frame_concatenates_sources_in_stream_order(store_url, begin_run):
    with StoreWriter(store_url) as writer:
        run = begin_run(writer)
        writer(Samples(run, None, "dmm", "W", np.arange(3.0), np.full(3, 2.0)))
        writer(Samples(run, None, "rapl", "W", np.arange(2.0), np.full(2, 5.0)))
        writer(Samples(run, None, "dmm", "W", np.arange(3.0, 5.0), np.full(2, 2.5)))
    frame = samples_frame(store_url, run)
    dmm = frame[frame["source"] == "dmm"]
    assert dmm["t"].tolist() == [0.0, 1.0, 2.0, 3.0, 4.0]
    assert frame.groupby("source", observed=True)["value"].sum().to_dict() == {
        "dmm": 11.0,
        "rapl": 10.0,
    }
    assert frame["phase_uid"].isna().all()
    assert samples_frame(store_url, run, source="rapl")["value"].tolist() == [5.0, 5.0]


def test_samples_frame_of_a_run_without_samples_is_empty(store_url, begin_run):
    with StoreWriter(store_url) as writer:
        run = begin_run(writer)
    frame = samples_frame(store_url, run)
    assert frame.empty
    assert list(frame.columns) == ["t", "value", "source", "unit", "phase_uid"]


def test_missing_pandas_is_a_clear_message(store_url, begin_run, monkeypatch):
    with StoreWriter(store_url) as writer:
        begin_run(writer)
    monkeypatch.setitem(sys.modules, "pandas", None)  # makes `import pandas` fail
    with pytest.raises(ImportError, match=r"hilbench\[pandas\]"):
        runs_frame(store_url)
    with Store(store_url) as store:  # the store itself does not need pandas
        assert len(store.runs()) == 1
