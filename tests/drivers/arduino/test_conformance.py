"""The arduino driver, on the firmware's host build over a real pty, passes the conformance
suite of hilbench/contracts (the same checks any driver passes)."""

from __future__ import annotations

import numpy as np

from hilbench.testing.driver_conformance import check_driver
from hilbench.workloads.asc.quant import QuantisedModel
from hilbench_drivers.arduino import ArduinoDriver
from tests.drivers.arduino.conftest import VECTORS


def test_the_emulated_board_conforms(emulator):
    model = QuantisedModel.load(VECTORS / "model.npz")
    driver = ArduinoDriver(port=emulator.path)
    try:
        sample = np.zeros(model.mfe_config.sample_rate, np.float32)
        assert check_driver(driver, asc_model=model, asc_sample=sample) == []
    finally:
        driver.close()
