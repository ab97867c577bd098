"""The agent's host GPIO marker (issue 35): the line is named, never a free path; it is declared
in capabilities only when it opened; a line that does not open is one log line and no marker.
A fake sysfs tree under ``HILBENCH_GPIO_ROOT`` stands for the host's GPIO."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from hilbench.agent.driver import DriverError
from hilbench.agent.marker_gpio import ROOT_ENV, HostGpioMarker, parse_line


def fake_sysfs(root: Path, number: int, exported: bool = True) -> Path:
    """``<root>/sys/class/gpio`` with an ``export`` file and, if ``exported``, line
    ``gpio<number>`` with its direction (in) and value files."""
    base = root / "sys" / "class" / "gpio"
    base.mkdir(parents=True)
    (base / "export").write_text("")
    if exported:
        line = base / f"gpio{number}"
        line.mkdir()
        (line / "direction").write_text("in\n")
        (line / "value").write_text("0\n")
    return base


@pytest.fixture
def root(tmp_path, monkeypatch):
    monkeypatch.setenv(ROOT_ENV, str(tmp_path))
    return tmp_path


def test_a_sysfs_line_that_opens_is_declared_and_driven(root):
    base = fake_sysfs(root, 17)
    edges = []
    marker = HostGpioMarker("gpio17", 20e-6, mirror=lambda level, t: edges.append((level, t)))
    assert marker.opened and marker.reason is None
    assert (base / "gpio17" / "direction").read_text() == "out"  # set to output on open
    declared = marker.declaration("during each inference")
    assert declared == {"line": str(base / "gpio17" / "value"), "interface": "sysfs",
                        "high": "during each inference", "low": "otherwise",
                        "latency_s": 20e-6, "source": "host GPIO"}
    marker.set(1)
    assert (base / "gpio17" / "value").read_text() == "1\n"
    marker.set(1)  # no edge: nothing written, nothing mirrored
    marker.set(0)
    assert (base / "gpio17" / "value").read_text() == "0\n"
    assert [level for level, _ in edges] == [1, 0] and edges[0][1] <= edges[1][1]
    marker.close()


def test_a_line_that_does_not_open_is_one_log_line_and_no_declaration(root, caplog):
    fake_sysfs(root, 17, exported=False)  # export is a plain file here: gpio5 never appears
    with caplog.at_level(logging.WARNING):
        marker = HostGpioMarker("gpio5")
    assert not marker.opened and marker.declaration("x") is None
    said = [r.getMessage() for r in caplog.records]
    assert len(said) == 1 and "marker line gpio5 did not open" in said[0]
    assert "software alignment" in said[0]
    marker.set(1)  # harmless: nothing to drive
    assert HostGpioMarker(None).declaration("x") is None


def test_a_character_device_line_needs_its_chip(root):
    marker = HostGpioMarker("gpiochip3:4")  # no <root>/dev/gpiochip3
    assert not marker.opened
    assert "gpiochip3" in marker.reason


@pytest.mark.parametrize("spec", [
    "../gpio17", "/etc/passwd", "/sys/class/gpio/../../../etc/passwd", "gpio17/../../x",
    "/dev/sda:1", "/tmp/gpiochip0:1", "gpiochip0", "gpio", "", "gpio17 ; rm"])
def test_a_name_is_not_a_path(spec):
    with pytest.raises(DriverError, match="names no GPIO line") as found:
        HostGpioMarker(spec)
    assert found.value.key == "marker_gpio"


def test_the_named_forms_and_what_they_mean():
    assert parse_line("gpiochip0:17") == ("chardev", "gpiochip0", 17)
    assert parse_line("/dev/gpiochip2:3") == ("chardev", "gpiochip2", 3)
    assert parse_line("gpio17") == ("sysfs", "gpio17", 17)
    assert parse_line("/sys/class/gpio/gpio17/value") == ("sysfs", "gpio17", 17)


def test_a_link_out_of_the_configured_root_is_refused(root, tmp_path_factory):
    outside = tmp_path_factory.mktemp("outside")
    (outside / "value").write_text("0\n")
    base = fake_sysfs(root, 17, exported=False)
    (base / "gpio9").symlink_to(outside)
    marker = HostGpioMarker("gpio9")
    assert not marker.opened and "outside" in marker.reason
    assert (outside / "value").read_text() == "0\n"  # never written


@pytest.mark.parametrize("latency", ["-1", "nan", "soon", "inf"])
def test_a_stated_latency_must_be_seconds(root, latency):
    fake_sysfs(root, 17)
    with pytest.raises(DriverError, match="marker_latency_s"):
        HostGpioMarker("gpio17", latency)
