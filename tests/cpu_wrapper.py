"""The cpu driver behind a wrapper, for tests of a device that misbehaves one way: a subclass
overrides the one call it changes, everything else is the real driver's."""

from __future__ import annotations

import threading
from typing import Any, ClassVar

import numpy as np

from hilbench.agent.driver import DriverResult
from hilbench_drivers.cpu import CpuDriver


class CpuWrapper:
    name: ClassVar[str] = "cpu-wrapper"

    def __init__(self, rapl_root: str) -> None:
        self.inner = CpuDriver(rapl_root=rapl_root)

    def capabilities(self) -> dict[str, Any]:
        return self.inner.capabilities()

    def configure(self, params: dict[str, Any]) -> DriverResult:
        return self.inner.configure(params)

    def load(self, params: dict[str, Any], arrays: list[np.ndarray]) -> DriverResult:
        return self.inner.load(params, arrays)

    def run(self, params: dict[str, Any], stop: threading.Event) -> DriverResult:
        return self.inner.run(params, stop)

    def close(self) -> None:
        self.inner.close()
