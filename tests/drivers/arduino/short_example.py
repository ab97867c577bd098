"""An Arduino example campaign run as CI can afford: windows cut to 3 s, two test clips, the
firmware's host build on a pty, the fixture data set in a private cache."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from hilbench.workloads.asc.procedures.run import ensure_fixture
from tests.subprocesses import run_campaign


def run_short_example(example: Path, host_program: Path,
                      tmp_path_factory: pytest.TempPathFactory
                      ) -> tuple[subprocess.CompletedProcess, Path]:
    """``hilbench run`` of ``example`` shortened; its output and store (it must succeed)."""
    pytest.importorskip("soundfile")
    cache = tmp_path_factory.mktemp("xdg-cache")
    ensure_fixture(cache / "hilbench" / "asc-fixture-0", seed=0)
    short = re.sub(r"^(idle_s|active_s) = [0-9.]+", r"\1 = 3.0", example.read_text(),
                   flags=re.M)
    short = re.sub(r"^limit = \d+", "limit = 2", short, flags=re.M)
    assert short.count("= 3.0") == 2 and "limit = 2" in short, "the example changed shape"
    tmp = tmp_path_factory.mktemp(example.stem)
    campaign = tmp / example.name
    campaign.write_text(short)
    db = tmp / "r.sqlite"
    proc = run_campaign(campaign, db, extra_env={
        "XDG_CACHE_HOME": str(cache), "COLUMNS": "200",
        "HILBENCH_ARDUINO_HOST": str(host_program)})
    assert proc.returncode == 0, proc.stderr
    return proc, db
