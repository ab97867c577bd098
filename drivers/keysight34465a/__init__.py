"""Keysight 34465A digital multimeter as a power source (timed, buffered SCPI acquisition).

pyvisa is imported only when an instrument is opened, so hilbench runs without it; install
the driver's dependencies with ``pip install hilbench[keysight]``.
"""

from .driver import Keysight34465A
from .settings import (
    Keysight34465ASettings,
    min_sample_interval_s,
)

__all__ = ["Keysight34465A", "Keysight34465ASettings", "min_sample_interval_s"]
