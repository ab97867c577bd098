"""An Arduino example campaign run as CI can afford: windows cut to 3 s (or shorter, where the
instrument samples fast enough), two test clips, the firmware's host build on a pty, the fixture
data set in a private cache."""

from __future__ import annotations

import re
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from hilbench.workloads.asc.procedures.run import ensure_fixture
from tests.campaign_toml import patient
from tests.subprocesses import run_campaign


def run_short_example(example: Path, host_program: Path,
                      tmp_path_factory: pytest.TempPathFactory, window_s: float = 3.0
                      ) -> tuple[subprocess.CompletedProcess, Path]:
    """``hilbench run`` of ``example`` shortened to ``window_s`` idle and active windows; its
    output and store (it must succeed)."""
    pytest.importorskip("soundfile")
    cache = tmp_path_factory.mktemp("xdg-cache")
    ensure_fixture(cache / "hilbench" / "asc-fixture-0", seed=0)
    short, windows = re.subn(r"^(idle_s|active_s) = [0-9.]+", rf"\1 = {window_s!r}",
                             patient(example.read_text()), flags=re.M)
    short = re.sub(r"^limit = \d+", "limit = 2", short, flags=re.M)
    assert windows == 2 and "limit = 2" in short, "the example changed shape"
    tmp = tmp_path_factory.mktemp(example.stem)
    campaign = tmp / example.name
    campaign.write_text(short)
    db = tmp / "r.sqlite"
    proc = run_campaign(campaign, db, extra_env={
        "XDG_CACHE_HOME": str(cache), "COLUMNS": "200",
        "HILBENCH_ARDUINO_HOST": str(host_program)})
    assert proc.returncode == 0, proc.stderr
    return proc, db


def assert_power_truth(metrics: Mapping[str, Any], truth: Mapping[str, float],
                       stages: tuple[str, ...]) -> None:
    """Idle, active, dynamic power and energy per inference each within its stated
    uncertainty of the power model's truth (energy: the true dynamic power times the time the
    device reported), every uncertainty above 0."""
    idle = metrics["idle_power_w"]
    assert abs(idle["value"] - truth["idle"]) <= idle["uncertainty"]
    for stage in stages:
        active = metrics[f"active_power_w.{stage}"]
        assert abs(active["value"] - truth[stage]) <= active["uncertainty"], stage
        dynamic = metrics[f"dynamic_power_w.{stage}"]
        true_dynamic = truth[stage] - truth["idle"]
        assert abs(dynamic["value"] - true_dynamic) <= dynamic["uncertainty"], stage
        energy = metrics[f"energy_per_inference_j.{stage}"]
        true_energy = true_dynamic * energy["meta"]["execution_time_s"]
        assert abs(energy["value"] - true_energy) <= energy["uncertainty"], stage
        assert energy["uncertainty"] > 0 and dynamic["uncertainty"] > 0


def exported_bundle(campaign: str, db: Path, out: Path) -> Path:
    """``hilbench audit export`` of ``campaign`` in store ``db`` to ``out`` (it must succeed)."""
    from tests.subprocesses import hilbench

    done = hilbench("audit", "export", campaign, "--db", db, "--out", out)
    assert done.returncode == 0, done.stderr
    return out
