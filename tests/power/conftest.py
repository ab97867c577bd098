"""Shared fixtures for power tests: a directory tree that imitates Linux powercap sysfs."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

import pytest

# Values seen on real machines (Skylake-era desktop package, client DRAM zone).
PACKAGE_RANGE_UJ = 262_143_328_850
DRAM_RANGE_UJ = 65_712_999_613


class FakePowercap:
    """Imitates the kernel layout: real zone directories under ``devices/virtual/powercap/<type>``
    and, in ``class/powercap``, one symlink per zone at any depth (as sysfs lists them flat).

    ``root`` is what a reader is pointed at instead of ``/sys/class/powercap``.
    """

    def __init__(self, base: Path) -> None:
        self.base = base
        self.root = base / "class" / "powercap"
        self.devices = base / "devices" / "virtual" / "powercap"
        self.root.mkdir(parents=True)
        self._zones: dict[str, Path] = {}

    def _control_type(self, control_type: str) -> Path:
        directory = self.devices / control_type
        if not directory.exists():
            directory.mkdir(parents=True)
            (directory / "enabled").write_text("1\n")
            os.symlink(os.path.relpath(directory, self.root), self.root / control_type)
        return directory

    def add_zone(
        self,
        zone_id: str,
        name: str,
        energy_uj: int = 0,
        max_energy_range_uj: int = PACKAGE_RANGE_UJ,
    ) -> Path:
        """Add ``zone_id`` (e.g. "intel-rapl:0:2"); its parent zone must exist already."""
        control_type = zone_id.split(":")[0]
        parent_id = zone_id.rsplit(":", 1)[0]
        if parent_id == control_type:
            parent = self._control_type(control_type)
        else:
            parent = self._zones[parent_id]
        zone = parent / zone_id
        zone.mkdir()
        (zone / "name").write_text(name + "\n")
        (zone / "energy_uj").write_text(f"{energy_uj}\n")
        (zone / "max_energy_range_uj").write_text(f"{max_energy_range_uj}\n")
        (zone / "enabled").write_text("1\n")
        (zone / "constraint_0_name").write_text("long_term\n")
        (zone / "constraint_0_power_limit_uw").write_text("65000000\n")
        os.symlink(os.path.relpath(zone, self.root), self.root / zone_id)
        self._zones[zone_id] = zone
        return zone

    def set_energy(self, zone_id: str, energy_uj: int) -> None:
        """Replace the counter atomically: a sysfs read never sees a half-written value."""
        target = self._zones[zone_id] / "energy_uj"
        scratch = target.with_name("energy_uj.tmp")
        scratch.write_text(f"{energy_uj}\n")
        os.replace(scratch, target)

    @contextmanager
    def drawing(self, watts: Mapping[str, float]) -> Iterator[None]:
        """While the block runs, each zone's counter counts ``watts[zone]`` on from where it
        stood (zones nest: give each its own). A read through hilbench's RAPL reader first
        writes the file it reads up to date, as the kernel reads the counter when the file is
        read. A thread that wrote every 1 ms instead lagged on a loaded host by tens of ms at a
        window's start and not its end (35.1 W read for a true 33 W over 0.5 s in CI)."""
        from hilbench.power import rapl

        start = {zone: int((self._zones[zone] / "energy_uj").read_text()) for zone in watts}
        paths = {(self._zones[zone] / "energy_uj").resolve(): zone for zone in watts}
        t0 = time.monotonic()
        real_read = rapl._read_text

        def read_now(path: Path) -> str:
            zone = paths.get(Path(path).resolve())
            if zone is not None:
                elapsed = time.monotonic() - t0
                self.set_energy(zone, start[zone] + int(watts[zone] * elapsed * 1e6))
            return real_read(path)

        rapl._read_text = read_now
        try:
            yield
        finally:
            rapl._read_text = real_read

    def energy_path(self, zone_id: str) -> Path:
        return self.root / zone_id / "energy_uj"

    def add_client_layout(self, with_psys: bool = True, with_mmio: bool = True) -> None:
        """A single-socket laptop/desktop: package-0 with core, uncore, dram; psys; mmio."""
        self.add_zone("intel-rapl:0", "package-0", 1_000_000)
        self.add_zone("intel-rapl:0:0", "core", 600_000)
        self.add_zone("intel-rapl:0:1", "uncore", 100_000)
        self.add_zone("intel-rapl:0:2", "dram", 200_000, DRAM_RANGE_UJ)
        if with_psys:
            self.add_zone("intel-rapl:1", "psys", 5_000_000)
        if with_mmio:
            self.add_zone("intel-rapl-mmio:0", "package-0", 1_000_000)


@pytest.fixture
def fake_powercap(tmp_path: Path) -> FakePowercap:
    """A powercap tree like a single-socket Intel client (package-0 + core/uncore/dram, psys,
    intel-rapl-mmio). Add zones with ``add_zone`` and move counters with ``set_energy``."""
    fake = FakePowercap(tmp_path / "sys")
    fake.add_client_layout()
    return fake


@pytest.fixture
def empty_powercap(tmp_path: Path) -> FakePowercap:
    """An empty powercap class directory, for building unusual layouts zone by zone."""
    return FakePowercap(tmp_path / "sys")
