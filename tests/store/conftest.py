"""Builders for document streams written through a real StoreWriter into a real file."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path

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
from hilbench.store import StoreWriter
from tests.postgres import fresh_database


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    """A store path in a folder that exists (a store is never made in a folder that does
    not: a mistyped path is refused)."""
    (tmp_path / "results").mkdir()
    return tmp_path / "results" / "hilbench.sqlite"


def start_run(
    writer: StoreWriter,
    campaign_uid: str = "camp",
    unit_key: str = "n=10/seed=0",
    params: dict | None = None,
) -> str:
    uid = new_uid()
    writer(
        RunStart(
            uid=uid,
            campaign_uid=campaign_uid,
            unit_key=unit_key,
            procedure="qubo.fixed_timeout",
            params=params if params is not None else {"nodes": 10, "seed": 0},
            agents={"cpu@host": {"driver": "cpu"}},
            t=100.0,
            wall_time=time.time(),
            hilbench_version="0.1.0",
        )
    )
    return uid


def write_full_run(
    writer: StoreWriter,
    campaign_uid: str = "camp",
    unit_key: str = "n=10/seed=0",
    exit_status: str = "success",
    reason: str = "",
    n_samples: int = 50,
) -> str:
    """A complete run: one phase with events, samples from one meter and a metric."""
    run_uid = start_run(writer, campaign_uid, unit_key)
    phase = new_uid()
    writer(PhaseStart(phase, run_uid, "solve", 100.5, {}))
    writer(Event(run_uid, phase, "solve_done", 101.0, {"cost": -4}))
    t = 100.5 + np.arange(n_samples) * 1e-3
    writer(Samples(run_uid, phase, "dmm", "W", t, np.full(n_samples, 2.5)))
    writer(Metric(run_uid, "bks_gap", 0.0, "", 0.0))
    writer(PhaseStop(phase, run_uid, 101.0, "success"))
    writer(RunStop(run_uid, 101.1, exit_status, reason))
    return run_uid


@pytest.fixture
def full_run() -> Callable[..., str]:
    return write_full_run


@pytest.fixture
def begin_run() -> Callable[..., str]:
    return start_run


@pytest.fixture(params=["sqlite", "postgresql"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Path | str]:
    """The same tests on both back ends: a SQLite file, or a fresh PostgreSQL database
    (dropped afterwards; skipped outside CI when no server is reachable)."""
    if request.param == "sqlite":
        (tmp_path / "results").mkdir()
        yield tmp_path / "results" / "hilbench.sqlite"
        return
    with fresh_database("hb_test") as url:
        yield url
