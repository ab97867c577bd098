"""A missing or unsupported vendor package is a message naming it, the range and the command."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError

import pytest

from hilbench.agent.driver import DriverError
from hilbench_drivers.xylo import vendor


def test_missing_package_names_range_and_install_command(monkeypatch):
    def not_installed(name):
        raise PackageNotFoundError(name)

    monkeypatch.setattr(vendor, "version", not_installed)
    with pytest.raises(DriverError) as err:
        vendor.require("rockpool")
    assert err.value.code == "missing_sdk"
    assert "rockpool is not installed" in str(err.value)
    assert ">=2.8,<2.9" in str(err.value) and "pip install 'hilbench[xylo]'" in str(err.value)


def test_unsupported_rockpool_is_refused_before_import(monkeypatch):
    monkeypatch.setattr(vendor, "version", lambda name: "3.1.0")
    imported = []
    monkeypatch.setattr(vendor.importlib, "import_module", imported.append)
    with pytest.raises(DriverError, match=r"rockpool 3\.1\.0 is installed; .* supports rockpool "
                                          r">=2\.8,<2\.9"):
        vendor.require("rockpool")
    assert imported == []  # 3.x would import samna (a downloading stub) at import time


@pytest.mark.parametrize(("have", "spec", "ok"), [
    ("2.8", ">=2.8,<2.9", True), ("2.8.1", ">=2.8,<2.9", True), ("2.9", ">=2.8,<2.9", False),
    ("2.7.2", ">=2.8,<2.9", False), ("0.1.3", ">=0.1.3,<0.2", True), ("0.7.1", ">=0.4,<0.8", True),
])
def test_version_ranges(have, spec, ok):
    assert vendor.in_range(have, spec) is ok


def test_hardware_backend_without_samna_says_what_to_install(monkeypatch):
    from hilbench_drivers.xylo import XyloDriver

    def not_installed(name):
        raise PackageNotFoundError(name)

    monkeypatch.setattr(vendor, "version", not_installed)
    with pytest.raises(DriverError, match="samna is not installed") as err:
        XyloDriver(backend="hardware")
    assert "pip install samna" in str(err.value)


def test_sounddevice_without_portaudio_names_the_library(monkeypatch):
    """``import sounddevice`` raises OSError when the PortAudio library is missing."""
    monkeypatch.setattr(vendor, "version", lambda name: "0.5.1")

    def no_portaudio(name):
        raise OSError("PortAudio library not found")

    monkeypatch.setattr(vendor.importlib, "import_module", no_portaudio)
    with pytest.raises(DriverError) as err:
        vendor.sounddevice()
    text = str(err.value)
    assert "sounddevice 0.5.1 is installed but does not import (PortAudio library not found)" \
        in text
    assert "pip install 'hilbench[xylo-hardware]'" in text and "libportaudio2" in text
    assert err.value.code == "missing_sdk"
