"""A host GPIO line an agent raises around each timed region: the marker of a device whose host
has a GPIO (a Xylo HDK's or a Loihi board's host), for an instrument to record in its own
sample stream (issue 35; windows cut by it in :mod:`hilbench.power.marker_windows`).

The line is named in the agent's options (``marker_gpio``), never taken as a free path:

- ``gpiochipN:OFFSET`` (or ``/dev/gpiochipN:OFFSET``): line OFFSET of the Linux GPIO character
  device, through the maintained ``gpiod`` binding (libgpiod 2);
- ``gpioN`` (or ``/sys/class/gpio/gpioN[/value]``): the legacy sysfs interface, exported and
  set to output if it is not yet.

Anything else (``..``, another absolute path, a name with a slash) is refused. With
``HILBENCH_GPIO_ROOT`` set (tests, a simulated bench) both live under that folder instead of
``/``: ``<root>/sys/class/gpio/gpioN/value``, ``<root>/dev/gpiochipN``, and nothing read or
written may leave it. A line that does not open is said in one log line at start-up; the agent
then declares no marker, and the windows stay in software alignment saying so.

The stated latency (``marker_latency_s``) bounds how far the line's edge lies from the timed
work it marks (a user-space write through the kernel, and the host→device path inside the
region): it is declared with the line and added to each edge's uncertainty.
"""

from __future__ import annotations

import logging
import math
import os
import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hilbench.agent.driver import DriverError
from hilbench.clock import bench_now

log = logging.getLogger(__name__)

ROOT_ENV = "HILBENCH_GPIO_ROOT"
SYSFS = Path("sys/class/gpio")
DEV = Path("dev")
CONSUMER = "hilbench-marker"
# A user-space write (sysfs or a character-device ioctl) returns within tens of µs on an idle
# host; the default states 100 µs. Measure with a loop-back into the instrument to state less.
DEFAULT_LATENCY_S = 100e-6
EXPORT_WAIT_S = 1.0  # how long an exported sysfs line may take to appear
_CHARDEV = re.compile(r"^(?:/dev/)?(gpiochip\d{1,4}):(\d{1,5})$")
_SYSFS = re.compile(r"^(?:/sys/class/gpio/)?gpio(\d{1,5})(?:/value)?$")

# (level, bench time of the write) -> None: a simulated bench's copy of the line (the feed the
# simulated instrument samples), as the emulated Arduino's pin reaches it
Mirror = Callable[[int, float], None]


class GpioLineError(ValueError):
    """A marker line option that names no GPIO line (the message names the option)."""


def gpio_root() -> Path:
    """Where the GPIO interfaces live: ``/``, or the folder ``HILBENCH_GPIO_ROOT`` names."""
    configured = os.environ.get(ROOT_ENV)
    return Path(configured).resolve() if configured else Path("/")


def parse_line(spec: str) -> tuple[str, str, int]:
    """``("chardev", "gpiochipN", offset)`` or ``("sysfs", "gpioN", N)`` from the option's
    text; :class:`GpioLineError` for anything that is not one of the forms (see the module)."""
    text = str(spec).strip()
    if found := _CHARDEV.match(text):
        return "chardev", found[1], int(found[2])
    if found := _SYSFS.match(text):
        return "sysfs", f"gpio{int(found[1])}", int(found[1])
    raise GpioLineError(
        f"marker_gpio {text[:80]!r} names no GPIO line: use gpiochipN:OFFSET (character "
        "device, /dev/gpiochipN) or gpioN (/sys/class/gpio/gpioN); a path elsewhere is refused")


def _inside(root: Path, *parts: str | Path) -> Path:
    """``root/parts``, refused if it (after links) leaves ``root``: under a configured root
    nothing outside it is touched. The real ``/sys`` links each line elsewhere in ``/sys``."""
    path = root.joinpath(*parts)
    if root != Path("/") and not path.resolve().is_relative_to(root):
        raise OSError(f"{path} leads outside {ROOT_ENV}={root}")
    return path


class _SysfsLine:
    """A sysfs GPIO value file, exported and set to output when it is not yet."""

    def __init__(self, root: Path, name: str, number: int) -> None:
        base = _inside(root, SYSFS)
        line = _inside(root, SYSFS, name)
        if not line.exists() and (base / "export").exists():
            (base / "export").write_text(str(number))
            deadline = time.monotonic() + EXPORT_WAIT_S  # udev sets the new line up
            while not line.exists() and time.monotonic() < deadline:
                time.sleep(0.01)
        direction = _inside(root, SYSFS, name, "direction")
        if direction.exists() and direction.read_text().strip() != "out":
            direction.write_text("out")
        self.path = _inside(root, SYSFS, name, "value")
        self._file = open(self.path, "w", buffering=1)  # noqa: SIM115 - held open for writes
        self.set(0)

    def set(self, level: int) -> None:
        self._file.seek(0)
        self._file.write("1\n" if level else "0\n")
        self._file.flush()

    def close(self) -> None:
        self._file.close()


class _ChardevLine:
    """One output line of a GPIO character device, through ``gpiod`` (libgpiod 2)."""

    def __init__(self, root: Path, chip: str, offset: int) -> None:
        try:
            import gpiod
            from gpiod.line import Direction, Value
        except ImportError as exc:
            raise OSError("the gpiod package (libgpiod 2 binding) is not installed: pip "
                          "install gpiod, or name a sysfs line (gpioN)") from exc
        self.path = _inside(root, DEV, chip)
        self._value = Value
        self._offset = offset
        settings = gpiod.LineSettings(direction=Direction.OUTPUT, output_value=Value.INACTIVE)
        self._request = gpiod.request_lines(str(self.path), consumer=CONSUMER,
                                            config={offset: settings})

    def set(self, level: int) -> None:
        self._request.set_value(self._offset,
                                self._value.ACTIVE if level else self._value.INACTIVE)

    def close(self) -> None:
        self._request.release()


class HostGpioMarker:
    """The agent's marker line: :meth:`set` around each timed region, :meth:`declaration` for
    its capabilities (None unless the line opened)."""

    def __init__(self, spec: str | None, latency_s: float | str = DEFAULT_LATENCY_S, *,
                 mirror: Mirror | None = None) -> None:
        self.spec = spec
        self.mirror = mirror
        self.reason: str | None = None
        self._line: _SysfsLine | _ChardevLine | None = None
        self._level = 0
        try:
            self.latency_s = float(latency_s)
        except (TypeError, ValueError):
            raise DriverError(f"marker_latency_s must be a number of seconds, got "
                              f"{latency_s!r}", "bad_arguments", key="marker_latency_s") from None
        if not (math.isfinite(self.latency_s) and self.latency_s >= 0):
            raise DriverError(f"marker_latency_s must be 0 or more seconds, got {latency_s!r}",
                              "bad_arguments", key="marker_latency_s")
        if spec is None:
            self.reason = "no marker_gpio option: the host drives no marker line"
            return
        try:
            kind, name, number = parse_line(spec)
        except GpioLineError as exc:
            raise DriverError(str(exc), "bad_arguments", key="marker_gpio") from None
        self.kind = kind
        root = gpio_root()
        try:
            self._line = (_SysfsLine(root, name, number) if kind == "sysfs"
                          else _ChardevLine(root, name, number))
        except OSError as exc:
            self.reason = f"marker line {spec} did not open: {exc}"
            log.warning("%s; windows stay in software alignment", self.reason)

    @property
    def opened(self) -> bool:
        return self._line is not None

    def declaration(self, what: str) -> dict[str, Any] | None:
        """The capabilities' ``marker`` when the line opened (``what``: the region it marks)."""
        if self._line is None:
            return None
        return {"line": str(self._line.path), "interface": ("sysfs" if self.kind == "sysfs"
                                                            else "gpiod character device"),
                "high": what, "low": "otherwise", "latency_s": self.latency_s,
                "source": "host GPIO"}

    def set(self, level: int) -> None:
        """Drive the line to ``level`` (a simulated bench's copy hears it with the write's
        time); nothing without an open line. A write that fails fails the request."""
        if self._line is None or level == self._level:
            return
        try:
            self._line.set(level)
        except OSError as exc:
            raise DriverError(f"marker line {self.spec}: the write failed: {exc}",
                              "device_lost") from exc
        self._level = level
        if self.mirror is not None:
            self.mirror(level, bench_now())

    def close(self) -> None:
        line, self._line = self._line, None
        if line is not None:
            try:
                line.set(0)
            finally:
                line.close()
