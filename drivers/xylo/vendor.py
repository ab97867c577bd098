"""Lazy, version-checked imports of the Xylo vendor stack (Rockpool, xylosim, samna, Jax, pyusb,
sounddevice).

Supported Rockpool: 2.8 (``>=2.8,<2.9``). Rockpool 2.9 and 3.x import ``samna`` unconditionally
in ``rockpool.devices.xylo.syns65302.afe_samna_pdm`` and ``...syns63300.power_cycles_model``;
the PyPI ``samna`` is a stub that downloads the real package at import time, so on a machine
without the vendor's samna those versions cannot even simulate. 2.8 guards its samna imports
(``missing_backend_shim``) everywhere the simulated path goes, except the Xylo Audio 2 cycle
model, which :mod:`hilbench_drivers.xylo.cycles` loads without samna.

Every failure here is a :class:`DriverError` with code ``missing_sdk`` naming the package, the
supported range and the install command.
"""

from __future__ import annotations

import importlib
from importlib.metadata import PackageNotFoundError, version
from types import ModuleType

from hilbench.agent.driver import DriverError

INSTALL = "pip install 'hilbench[xylo]'  (Python 3.10 or 3.11, numpy < 2)"
SUPPORTED: dict[str, tuple[str, str]] = {
    # distribution: (supported range, install command)
    "rockpool": (">=2.8,<2.9", INSTALL),
    "xylosim": (">=0.1.3,<0.2", INSTALL),
    "jax": (">=0.4,<0.8", INSTALL),
    "samna": (
        ">=0.30",
        "pip install samna  (SynSense's package; only on the host the Xylo HDK is plugged "
        "into, see drivers/xylo/README.md)",
    ),
    "pyusb": (">=1.2", "pip install pyusb  (and apt-get install libusb-1.0-0)"),
    "sounddevice": (
        ">=0.4",
        "pip install 'hilbench[xylo-hardware]'  (sounddevice; its PortAudio library: "
        "apt-get install libportaudio2)",
    ),
}


def _version_tuple(text: str) -> tuple[int, ...]:
    parts = []
    for piece in text.split("."):
        digits = "".join(ch for ch in piece if ch.isdigit())
        if not digits:
            break
        parts.append(int(digits))
    return tuple(parts)


def in_range(installed: str, spec: str) -> bool:
    """``installed`` satisfies a range like ``>=2.8,<2.9`` (only >=, <, == are used here)."""
    have = _version_tuple(installed)
    for clause in spec.split(","):
        clause = clause.strip()
        for op in (">=", "<", "=="):
            if clause.startswith(op):
                want = _version_tuple(clause[len(op):])
                cut = have[: len(want)] if op == "==" else have
                ok = {">=": have >= want, "<": have < want, "==": cut == want}[op]
                if not ok:
                    return False
                break
    return True


def missing(package: str, why: str) -> DriverError:
    spec, command = SUPPORTED[package]
    return DriverError(
        f"{package} {why}; the Xylo driver supports {package} {spec}. Install: {command}",
        "missing_sdk",
    )


def require(package: str, module: str | None = None) -> ModuleType:
    """Import ``module`` (default: the package) after checking the installed version."""
    spec, _ = SUPPORTED[package]
    try:
        installed = version(package)
    except PackageNotFoundError:
        raise missing(package, "is not installed") from None
    if not in_range(installed, spec):
        raise missing(package, f"{installed} is installed") from None
    try:
        return importlib.import_module(module or package)
    except Exception as exc:  # a broken vendor install fails in many ways
        raise missing(package, f"{installed} is installed but does not import ({exc})") from exc


def rockpool_xylo_a2() -> ModuleType:
    """``rockpool.devices.xylo.syns61201`` with its simulator (xylosim) available."""
    require("xylosim")
    require("rockpool")
    return require("rockpool", "rockpool.devices.xylo.syns61201")


def samna() -> ModuleType:
    return require("samna")


def sounddevice() -> ModuleType:
    """PortAudio through ``sounddevice`` (plays samples into the HDK microphone). Its import
    raises ``OSError`` when the PortAudio library is missing; that too names the fix."""
    return require("sounddevice")

