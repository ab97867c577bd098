"""The cpu driver passes the conformance suite of hilbench/contracts for both of its roles
(QUBO solver with sa, tabu and anytime; ASC device)."""

from __future__ import annotations

import numpy as np

from hilbench.contracts.conformance import check_driver
from hilbench.workloads.asc.vectors import fixed_model
from hilbench_drivers.cpu import CpuDriver


def test_the_cpu_driver_conforms(tmp_path):
    model = fixed_model()
    driver = CpuDriver(rapl_root=str(tmp_path / "no-powercap"))
    sample = np.zeros(model.mfe_config.sample_rate, np.float32)
    assert check_driver(driver, asc_model=model, asc_sample=sample) == []
