"""The Xylo tests' environment: Rockpool needs numpy < 2, so the simulated back end lives in its
own virtual environment (``.venv-xylo``, made by ``bash scripts/setup-side-envs.sh xylo``). Tests
in the main environment reach it through real processes: an agent started with that interpreter,
or pytest run there on ``xylo_env/``. Without it they fail under CI (CI makes it) and skip with
that command elsewhere (tests/side_envs.py).
"""

from __future__ import annotations

import importlib.util
import os
import re
from pathlib import Path

import numpy as np
import pytest

from tests import side_envs
from tests.campaign_toml import patient

REPO = side_envs.REPO
HAS_ROCKPOOL = importlib.util.find_spec("rockpool") is not None

# xylo_env/ imports Rockpool: collected only where it is installed (the .venv-xylo run).
collect_ignore = [] if HAS_ROCKPOOL else ["xylo_env"]


@pytest.fixture(scope="session")
def xylo_python() -> Path:
    return side_envs.xylo_python()


@pytest.fixture(scope="session")
def asc_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An ``XDG_CACHE_HOME`` the example campaigns share: the ASC fixture (seed 0) made once a
    test process, and one AFE cache (``hilbench/xylo-afe``) for the whole session, so the AFE
    spikes of the fixture's test samples (~0.8 s of AFESim each) are simulated by the first
    campaign that needs them, not by each. The AFE cache is keyed by audio, settings and
    Rockpool version and written by atomic rename, so pytest-xdist's workers share it safely:
    it lives in their common session folder (the parent of each worker's own)."""
    from hilbench.private_files import private_dir
    from hilbench.workloads.asc.procedures.run import ensure_fixture

    cache = tmp_path_factory.mktemp("xdg-cache")
    ensure_fixture(cache / "hilbench" / "asc-fixture-0", seed=0)
    base = tmp_path_factory.getbasetemp()
    session = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
    (cache / "hilbench" / "xylo-afe").symlink_to(private_dir(session / "xylo-afe"))
    return cache


def shortened_example(name: str, xylo_python: Path, tables: int) -> str:
    """``examples/<name>`` made quick for a test: 1 s power windows, one test clip, the Xylo
    agent on ``xylo_python``; ``tables``: how many ``[[asc]]`` tables it shortens (checked)."""
    text = patient((REPO / "examples" / name).read_text())
    short = re.sub(r"^(idle_s|active_s) = [0-9.]+", r"\1 = 1.0", text, flags=re.M)
    short = re.sub(r"^limit = \d+", "limit = 1", short, flags=re.M)
    short = short.replace('python = "../.venv-xylo/bin/python"', f'python = "{xylo_python}"')
    assert len(re.findall(r"^(idle_s|active_s) = 1.0", short, flags=re.M)) == 2 * tables
    assert len(re.findall(r"^limit = 1\b", short, flags=re.M)) == tables
    return short


def tiny_network_parts(hidden: int = 8, seed: int = 0):
    """A small valid Xylo Audio 2 specification (random int8 weights), numpy only."""
    from hilbench_drivers.xylo.network import XyloNetwork

    rng = np.random.default_rng(seed)
    spec = {
        "weights_in": rng.integers(-20, 21, (16, hidden, 1)),
        "weights_rec": np.zeros((hidden + 4, hidden + 4, 1), np.int64),
        "weights_out": rng.integers(-20, 21, (hidden + 4, 4)),
        "dash_mem": np.full(hidden + 4, 2), "dash_mem_out": np.full(4, 2),
        "dash_syn": np.full(hidden + 4, 2), "dash_syn_2": np.full(hidden + 4, 2),
        "dash_syn_out": np.full(4, 2), "threshold": np.full(hidden + 4, 30),
        "threshold_out": np.full(4, 30), "bias": np.zeros(hidden + 4, np.int64),
        "bias_out": np.zeros(4, np.int64),
    }
    spec["weights_in"] = np.concatenate(
        (spec["weights_in"], np.zeros((16, 4, 1), np.int64)), axis=1)
    # hidden + 4 neurons: the last four relay to nothing, so aliases and fan-out stay simple
    return XyloNetwork(
        spec=spec,
        weight_shifts={"weight_shift_in": 0, "weight_shift_rec": 0, "weight_shift_out": 0},
        aliases=[[] for _ in range(hidden + 4)], dt=0.01,
        classes=("airport", "street_traffic", "bus", "park"), sample_rate=16000,
    )
