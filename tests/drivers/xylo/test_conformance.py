"""The xylo driver passes the conformance suite of hilbench/contracts on the samna/Rockpool
stand-ins: the HDK with the host AFE, and with the chip's own AFE (the simulated back end is
checked in the Xylo environment, xylo_env/test_simulated_path.py)."""

from __future__ import annotations

import numpy as np
import pytest

from hilbench.testing.driver_conformance import check_driver
from tests.drivers.xylo import standin
from tests.drivers.xylo.conftest import tiny_network_parts
from tests.drivers.xylo.test_chip_afe import open_chip_driver, shaped_audio
from tests.drivers.xylo.test_hardware import open_driver


def test_the_xylo_driver_on_the_hdk_conforms():
    driver, _ = open_driver(standin.Calls())
    raster = np.zeros((100, 16), np.uint8)
    raster[:, 3] = 2
    # The host AFE (AFESim) needs Rockpool; it is tested in the Xylo environment.
    driver._spikes = lambda audio: (raster, {"afe_cached": True})
    assert check_driver(driver, asc_model=tiny_network_parts(),
                        asc_sample=np.zeros(16000, np.float32)) == []


@pytest.mark.slow  # each recording on the chip's AFE plays the sample in real time
@pytest.mark.quiet  # real-time playback: about 1 s of CPU in 32 s
def test_the_xylo_driver_with_the_chips_afe_conforms():
    driver, _ = open_chip_driver(standin.Calls())
    assert check_driver(driver, asc_model=tiny_network_parts(), asc_sample=shaped_audio()) == []
