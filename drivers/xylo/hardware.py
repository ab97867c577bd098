"""The Xylo Audio 2 HDK through Rockpool 2.8 and samna: discovery, configuration, core clock,
accelerated-time inference with ``XyloSamna`` and on-board power per rail.

Calls, in order (Rockpool 2.8 source, ``rockpool/devices/xylo``):
  ``helper.find_xylo_hdks() -> (hdks, modules, versions)``  ("syns61201" = Xylo Audio 2)
  ``syns61201.xa2_devkit_utils.set_xylo_core_clock_freq(hdk, MHz) -> obtained MHz``
  ``syns61201.xa2_devkit_utils.set_power_measure(hdk, Hz) -> (power_buf, power_monitor)``
  ``syns61201.config_from_specification(**spec) -> (config, is_valid, message)`` — the hidden
      bias is the keyword ``bias_hidden`` there (the mapper calls it ``bias``; an unknown
      keyword would be swallowed by ``**kwargs`` and the bias silently dropped)
  ``syns61201.XyloSamna(hdk, config, dt=…, output_mode="Spike", power_frequency=…)``
  ``XyloSamna.evolve(raster (T, Nin) int) -> (output (T, Nout), {}, record)``
  ``syns61201.AFESamna`` for pre-processing on the chip's own AFE (``-o afe=chip``; see
      :mod:`hilbench_drivers.xylo.chip_afe`)
Power events from ``power_buf.get_events()`` carry ``channel`` (``samna.xyloA2TestBoard.
MeasurementChannels``: Io, Logic, LogicAfe, IoAfe) and ``value`` in watts (as ``XyloSamna.evolve``
reads them). Inference time is the agent's clock around ``evolve`` (accelerated time; it
includes the USB transfer of the input events and the read-out, which the report says).
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from types import ModuleType
from typing import Any

import numpy as np

from hilbench.agent.driver import DriverError
from hilbench.clock import now
from hilbench_drivers.xylo import vendor
from hilbench_drivers.xylo.network import MAX_INPUT_EVENTS_PER_STEP, XyloNetwork
from hilbench_drivers.xylo.simulated import Inference

XYLO_AUDIO_2 = "syns61201"
# MeasurementChannels member -> rail name in results
RAILS = {"Io": "io", "Logic": "snn_core", "LogicAfe": "afe_core", "IoAfe": "afe_ldo"}
AFE_RAILS = ("afe_core", "afe_ldo")
HOST_AFE_TIMING = (
    "pre-processing not measured (analog front end simulated on the host by Rockpool AFESim, "
    "spikes sent to the chip over USB); inference on the Xylo Audio 2 HDK, timed on the agent's "
    "clock around XyloSamna.evolve (accelerated time, includes the USB transfer)")
CHIP_AFE_TIMING = (
    "pre-processing on the chip's analog front end in real time (Rockpool AFESamna records while "
    "the sample plays into the HDK microphone; time = the sample's recording window, the "
    "speaker-to-AFE latency measured with a click and reported beside it; power = the AFE rails "
    "afe_core + afe_ldo); inference on the Xylo Audio 2 HDK from the recorded events, timed on "
    "the agent's clock around XyloSamna.evolve (accelerated time, includes the USB transfer)")


@dataclass
class VendorModules:
    """The vendor objects the hardware path calls; tests pass a stand-in with the same names."""

    samna: ModuleType
    xylo: ModuleType  # rockpool.devices.xylo (find_xylo_hdks)
    sounddevice: ModuleType | None = None  # imported when the on-chip AFE needs a speaker

    @classmethod
    def import_real(cls) -> VendorModules:
        samna = vendor.samna()
        vendor.rockpool_xylo_a2()
        return cls(samna=samna, xylo=vendor.require("rockpool", "rockpool.devices.xylo"))


def usb_listing() -> list[str]:
    """Every USB device pyusb sees, ``vid:pid manufacturer product`` (so a user sees what is
    plugged in when no HDK is found), or one line saying why none can be listed."""
    try:
        usb_core = vendor.require("pyusb", "usb.core")
        usb_util = vendor.require("pyusb", "usb.util")
    except DriverError as exc:
        return [f"(cannot list USB devices: {exc})"]
    try:
        devices = list(usb_core.find(find_all=True))
    except Exception as exc:  # NoBackendError: no libusb
        return [f"(cannot list USB devices: {exc}; install libusb-1.0)"]
    lines = []
    for dev in devices:
        names = []
        for index in (dev.iManufacturer, dev.iProduct):
            try:
                names.append(usb_util.get_string(dev, index) if index else "")
            except Exception:  # no permission to open the device
                names.append("?")
        lines.append(f"{dev.idVendor:04x}:{dev.idProduct:04x} {' '.join(names).strip()}".strip())
    return lines or ["(no USB devices visible)"]


class HardwareXylo:
    """One Xylo Audio 2 HDK, configured for one network at a time."""

    simulated = False
    simulation = ""
    onboard_power = True  # window replies carry measured per-rail power

    def __init__(self, hdk: Any, module: ModuleType, modules: VendorModules,
                 core_clock_mhz: float, power_hz: float, afe: dict[str, Any] | None = None
                 ) -> None:
        self.hdk = hdk
        self.x = module
        self.modules = modules
        self.power_hz = power_hz
        utils = module.xa2_devkit_utils
        self.core_clock_mhz = float(utils.set_xylo_core_clock_freq(hdk, core_clock_mhz))
        self._power_buf, self._power_monitor = utils.set_power_measure(hdk, power_hz)
        self._channels = {int(getattr(modules.samna.xyloA2TestBoard.MeasurementChannels, k)): v
                          for k, v in RAILS.items()}
        self._module: Any = None
        self.network: XyloNetwork | None = None
        self._window_t0 = 0.0
        self.chip_afe = self._chip_front_end(afe) if afe is not None else None
        self.timing = CHIP_AFE_TIMING if self.chip_afe else HOST_AFE_TIMING
        # A sample's time in a request's window outside its stages: its 1 s of audio played
        # into the microphone and the AFE's latency (chip AFE), or its spikes sent over USB.
        self.sample_untimed = {"max_s": 5.0, "reason": "a sample's 1 s of audio played into the "
                               "microphone with the AFE's latency, or its input spikes sent over "
                               "USB, and the board's read-out"}

    def _chip_front_end(self, options: dict[str, Any]) -> Any:
        from hilbench_drivers.xylo.chip_afe import ChipFrontEnd
        from hilbench_drivers.xylo.playback import Speaker

        speaker = Speaker(options.pop("speaker", None), sd=self.modules.sounddevice)
        return ChipFrontEnd(self.hdk, self.x.AFESamna, speaker, **options)

    @classmethod
    def open(cls, core_clock_mhz: float = 50.0, power_hz: float = 5.0,
             modules: VendorModules | None = None, afe: dict[str, Any] | None = None
             ) -> HardwareXylo:
        """The first Xylo Audio 2 HDK Rockpool finds; none found lists the USB devices.
        ``afe`` (the :class:`~hilbench_drivers.xylo.chip_afe.ChipFrontEnd` options plus
        ``speaker``) pre-processes on the chip's AFE instead of the host's AFESim."""
        modules = modules or VendorModules.import_real()
        if afe is not None and modules.sounddevice is None:
            modules.sounddevice = vendor.sounddevice()
        hdks, support, versions = modules.xylo.find_xylo_hdks()
        for hdk, module, kind in zip(hdks, support, versions, strict=True):
            if kind == XYLO_AUDIO_2:
                return cls(hdk, module, modules, core_clock_mhz, power_hz, afe)
        found = ", ".join(versions) or "none"
        listing = "\n  ".join(usb_listing())
        raise DriverError(
            f"no Xylo Audio 2 HDK ({XYLO_AUDIO_2}) found (Xylo HDKs found: {found}). "
            f"USB devices:\n  {listing}", "driver_error")

    def configure(self, network: XyloNetwork) -> dict[str, Any]:
        spec = network.specification()
        dt = spec.pop("dt")
        spec["bias_hidden"] = spec.pop("bias")
        config, is_valid, message = self.x.config_from_specification(**spec)
        if not is_valid:
            raise DriverError(f"samna refused the network configuration: {message}",
                              "bad_arguments")
        self._module = self.x.XyloSamna(self.hdk, config, dt=dt, output_mode="Spike",
                                        power_frequency=self.power_hz)
        self.network = network
        reply = {"backend": "xylo-hdk", "core_clock_mhz": self.core_clock_mhz,
                 "power_hz": self.power_hz}
        if self.chip_afe is not None:
            self.chip_afe.check_network(float(dt))
            reply["afe_calibration_s"] = self.chip_afe.calibrate()
        return reply

    def calibrate(self) -> dict[str, Any]:
        """The on-chip AFE's one-time auto-calibration (about 50 s); nothing on the host AFE."""
        if self.chip_afe is None:
            return {}
        return {"afe_calibration_s": self.chip_afe.calibrate()}

    def infer(self, raster: np.ndarray, on_start: Any = None) -> Inference:
        if self._module is None:
            raise DriverError("no network configured on the HDK", "not_loaded")
        events = np.clip(np.asarray(raster, dtype=int), 0, MAX_INPUT_EVENTS_PER_STEP)
        t_start = now()
        if on_start:
            on_start(t_start)
        output, _, _ = self._module.evolve(events)
        t_end = now()
        spikes = np.asarray(output)
        return Inference(spikes.sum(axis=0), t_end - t_start, t_end - t_start, t_start, t_end,
                         {"steps": int(events.shape[0]),
                          "time_source": "agent clock around XyloSamna.evolve (accelerated "
                                         "time, includes USB transfer)"})

    # -- on-board power --------------------------------------------------------------------------

    def power_window_start(self) -> None:
        self._power_buf.get_events()  # drop what came before the window
        self._window_t0 = now()

    def power_window_end(self, rails: tuple[str, ...] | None = None) -> dict[str, Any]:
        """Readings per rail since :meth:`power_window_start` (``rails``: only those)."""
        events = self._power_buf.get_events()
        t1 = now()
        samples: dict[str, list[float]] = {rail: [] for rail in rails or RAILS.values()}
        for event in events:
            rail = self._channels.get(int(event.channel))
            if rail in samples:
                samples[rail].append(float(event.value))
        if not all(samples.values()):
            empty = [r for r, v in samples.items() if not v]
            return {"measured": False, "source": "xylo-onboard",
                    "reason": f"no on-board power samples for rails {empty} in "
                              f"{t1 - self._window_t0:.2f} s at {self.power_hz} Hz"}
        rails = {rail: float(np.mean(v)) for rail, v in samples.items()}
        return {"measured": True, "source": "xylo-onboard", "rails_w": rails,
                "avg_power_w": float(sum(rails.values())), "domains": list(rails),
                "samples_w": samples, "rate_hz": self.power_hz,
                "duration_s": t1 - self._window_t0}

    def idle(self, duration_s: float, stop: threading.Event) -> dict[str, Any]:
        """Network configured and ready (not asleep), no input: on-board power over the window."""
        if self._module is None:
            raise DriverError("idle power needs the network configured first", "not_loaded")
        self.power_window_start()
        deadline = now() + duration_s
        while not stop.is_set() and now() < deadline:
            time.sleep(min(0.05, max(0.0, deadline - now())))
        return self.power_window_end()

    def power(self) -> dict[str, Any]:
        return {"source": "xylo-onboard", "rails": list(RAILS.values()),
                "rate_hz": self.power_hz, "category": "on-board instrument"}

    def describe(self) -> dict[str, Any]:
        afe = self.chip_afe.describe() if self.chip_afe else {"afe": "host"}
        return {"backend": "hardware", "device": "Xylo Audio 2 HDK (SYNS61201)",
                "core_clock_mhz": self.core_clock_mhz, "power_hz": self.power_hz, **afe}

    def close(self) -> None:
        self._module = None
