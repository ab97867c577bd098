"""Sample batches in the store near the size of their values as they came, restored bit for
bit (hilbench/store/sample_blobs.py), and stores written before still read as they were."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import numpy as np
import pytest

from hilbench.documents import PhaseStart, RunStart, Samples, new_uid
from hilbench.store import Store, StoreDamaged, StoreWriter
from hilbench.store.sample_blobs import (
    stamps_blob,
    stamps_from_blob,
    values_blob,
    values_from_blob,
)

pytestmark = pytest.mark.timeout(30)

RATE = 1_000_000


def _stamps(second: float, n: int = RATE) -> np.ndarray:
    return second + np.arange(n) * (1.0 / RATE)


@pytest.mark.parametrize("second", [0.0, 1.0, 1800.0, 3599.0, 86400.5])
def test_stamps_on_a_line_cost_almost_nothing_and_come_back_exactly(second):
    t = _stamps(second)
    blob = stamps_blob(t)
    assert len(blob) < 0.05 * len(t)  # measured: 1 byte (all on the line) to ~21 kB a million
    back = stamps_from_blob(blob, len(t), float(t[0]), float(t[-1]))
    assert back.tobytes() == t.tobytes()


def test_stamps_off_any_line_stay_raw_and_any_batch_round_trips():
    rng = np.random.default_rng(3)
    irregular = np.cumsum(rng.exponential(0.3, 500)) + 100.0
    assert stamps_blob(irregular) == irregular.astype("<f8").tobytes()
    for t in (irregular, np.array([5.0]), np.array([1.0, 1.0, 1.0]), _stamps(-2.0, 10),
              np.array([-1.0, 0.0, 1.0]), np.array([0.0, 1e-300, 2e-300]), np.empty(0)):
        blob = stamps_blob(t)
        assert len(t) == 0 or len(blob) != 8 * len(t) or blob == t.astype("<f8").tobytes()
        back = stamps_from_blob(blob, len(t), t[0] if len(t) else None,
                                t[-1] if len(t) else None)
        assert back.tobytes() == t.astype(np.float64).tobytes()


def test_values_are_float32_only_when_that_loses_nothing():
    narrow = np.linspace(0, 1, 1000, dtype=np.float32)
    assert len(values_blob(narrow)) == 4000
    assert len(values_blob(narrow.astype(np.float64))) == 4000  # exactly float32 values
    wide = np.linspace(0, 1, 1000) + 1e-12
    assert len(values_blob(wide)) == 8000
    special = np.array([np.nan, np.inf, -np.inf, 0.5])
    for values in (narrow, wide, special, np.array([1e300, 1.0])):
        blob = values_blob(values)
        back = values_from_blob(blob, len(values))
        assert back.dtype == np.float64
        assert back.tobytes() == values.astype(np.float64).tobytes()


def test_a_blob_of_no_known_layout_is_named_damaged():
    with pytest.raises(StoreDamaged, match="neither raw float64 nor a layout"):
        stamps_from_blob(b"\x07abc", 10, 0.0, 1.0)
    with pytest.raises(StoreDamaged, match="do not decompress"):
        stamps_from_blob(b"\x01not zlib", 10, 0.0, 1.0)
    with pytest.raises(StoreDamaged, match="neither float64 nor float32"):
        values_from_blob(b"123", 10)


def _write(path, t, values) -> str:
    run, phase = new_uid(), new_uid()
    with StoreWriter(path) as writer:
        writer(RunStart(run, new_uid(), "t", "bench.blobs", {}, {}, 0.0, 0.0, "0"))
        writer(PhaseStart(phase, run, "active", 0.0, {}))
        writer(Samples(run, phase, "js", "W", t, values))
    return run


def test_the_store_keeps_a_float32_stream_near_its_raw_size_and_reads_it_exactly(store_url):
    t = _stamps(1234.0, 200_000)
    values = (0.1 + 1e-3 * np.random.default_rng(0).standard_normal(len(t))).astype(np.float32)
    run = _write(store_url, t, values)
    if isinstance(store_url, Path):  # the SQLite file: the blobs' sizes
        with sqlite3.connect(store_url) as conn:
            t_bytes, v_bytes = conn.execute(
                "SELECT length(t), length(vals) FROM samples").fetchone()
        assert v_bytes == 4 * len(t) and t_bytes < 0.05 * len(t)
    with Store(store_url) as store:
        t_back, v_back = store.samples(run, "js")
        (batch,) = list(store.sample_batches(run, "js"))
    assert t_back.tobytes() == t.tobytes() and batch["t"].tobytes() == t.tobytes()
    assert np.array_equal(v_back, values.astype(np.float64))
    assert np.array_equal(batch["values"], values.astype(np.float64))


def test_batches_stored_as_raw_float64_before_still_read(tmp_path):
    """The layout a store written before this module holds: both blobs raw float64."""
    path = tmp_path / "old.sqlite"
    t = np.array([0.5, 0.7, 0.75])
    values = np.array([0.1, 0.2, 0.3])
    run = _write(path, t, values)
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE samples SET t = ?, vals = ?",
                     (t.astype("<f8").tobytes(), values.astype("<f8").tobytes()))
    with Store(path) as store:
        t_back, v_back = store.samples(run, "js")
    assert t_back.tolist() == t.tolist() and v_back.tolist() == values.tolist()
