"""The cpu driver passes the conformance suite of hilbench/contracts for both of its roles
(QUBO solver with sa, tabu and anytime; ASC device)."""

from __future__ import annotations

import time

import numpy as np
import pytest

from hilbench.testing.driver_conformance import check_driver
from hilbench.workloads.asc.vectors import fixed_model
from hilbench_drivers.cpu import CpuDriver


@pytest.mark.serial  # the kit holds the sample list's untimed time per sample to a bound
def test_the_cpu_driver_conforms(tmp_path):
    model = fixed_model()
    driver = CpuDriver(rapl_root=str(tmp_path / "no-powercap"))
    sample = np.zeros(model.mfe_config.sample_rate, np.float32)
    assert check_driver(driver, asc_model=model, asc_sample=sample) == []


class UnderDeclaring(CpuDriver):
    """The cpu driver spending 5 ms a sample outside its stages that it does not declare, and
    a Lava-like 2 ms per run reported as untimed_s beside a declared maximum of 1 ms."""

    def capabilities(self):
        caps = super().capabilities()
        caps["qubo"]["untimed"] = {"max_s": 1e-3, "reason": "a process per run"}
        return caps

    def solve(self, body, stop):
        solved = super().solve(body, stop)
        solved.reply.untimed_s = 2e-3
        return solved

    def run_sample(self, body):
        reply = super().run_sample(body)
        time.sleep(5e-3)  # after its region: in the request's window, in no stage
        return reply


def test_untimed_work_past_what_a_driver_declares_fails_the_suite_by_name(tmp_path):
    model = fixed_model()
    driver = UnderDeclaring(rapl_root=str(tmp_path / "no-powercap"))
    sample = np.zeros(model.mfe_config.sample_rate, np.float32)
    failures = {f.check: f.reason for f in check_driver(driver, asc_model=model,
                                                        asc_sample=sample)}
    assert "past the maximum the driver declares, 0.001 s" in \
        failures["qubo sa: untimed work within what the driver declares"]
    key = ("asc: a sample list's time outside its stages within the declared per-sample "
           "untimed work")
    # CI-79 (a loaded run) had no failure under this name: an earlier ASC check that failed
    # ends the ASC checks, so the message shows every failure.
    assert key in failures, failures
    assert "past the 0 s the driver declares (asc.sample_untimed)" in failures[key]
