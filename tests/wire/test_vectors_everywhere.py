"""The committed vectors and the models in them are the same bits on every machine.

Each generator's ``--check`` recomputes its files (the reference int8 model is quantised afresh)
and exits 1 on any difference. They run under numpy 2 (this environment), under numpy 1.x
(``.venv-xylo``, another Python too), and under numpy 2 with OpenBLAS held to its SSE3 kernels
(``OPENBLAS_CORETYPE=Prescott``: other SIMD widths, another order of every BLAS sum — before the
calibration's sums were taken in a fixed order, this alone moved a scale in its 7th digit).
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests import side_envs

CHECKS = {
    "agent_messages": ["protocols/make_agent_vectors.py", "--check"],
    "asc_int8": ["-m", "hilbench.workloads.asc.vectors", "--check"],
    "firmware_headers": ["-m", "hilbench_drivers.arduino.model_header", "--check"],
}
ENVIRONMENTS = ["this", "numpy1", "sse3_blas"]


def _interpreter(environment: str) -> tuple[str, dict[str, str]]:
    env = dict(os.environ)
    if environment == "numpy1":
        return str(side_envs.xylo_python()), env
    if environment == "sse3_blas":
        env["OPENBLAS_CORETYPE"] = "Prescott"
    return sys.executable, env


def _numpy_major(python: str) -> int:
    probe = subprocess.run([python, "-c", "import numpy; print(numpy.__version__)"],
                           capture_output=True, text=True, timeout=60, check=True)
    return int(probe.stdout.split(".")[0])


@pytest.mark.parametrize("environment", ENVIRONMENTS)
@pytest.mark.parametrize("check", sorted(CHECKS))
def test_the_files_regenerate_identically(environment: str, check: str) -> None:
    python, env = _interpreter(environment)
    done = subprocess.run([python, *CHECKS[check]], cwd=side_envs.REPO, env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, (
        f"{check} is stale or machine-dependent under {environment} ({python}): "
        f"{done.stdout[-2000:]}{done.stderr[-2000:]}\n"
        "regenerate with: python protocols/make_agent_vectors.py; "
        "python -m hilbench.workloads.asc.vectors; python -m hilbench_drivers.arduino.model_header"
    )


def test_the_two_environments_have_different_numpy_majors() -> None:
    """What makes the numpy1 case above a test of "another numpy"."""
    assert _numpy_major(str(side_envs.xylo_python())) < 2 <= _numpy_major(sys.executable)
