"""A host loudspeaker through ``sounddevice`` (PortAudio): it plays each sample into the Xylo
HDK's microphone while the chip's analog front end records.

Calls (python-sounddevice 0.4/0.5 API, https://python-sounddevice.readthedocs.io/):
  ``sd.query_devices(device, kind="output") -> dict`` (``name``, ``max_output_channels``,
      ``default_samplerate``; raises ``sd.PortAudioError`` when there is no such device);
      ``sd.query_devices() -> DeviceList`` (its ``str`` is the table users know);
  ``sd.play(data (frames,) float32 in [-1, 1], samplerate=Hz, device=…, blocking=False)`` —
      returns once the output stream has started;
  ``sd.wait()`` — blocks until the playback has finished.
The start is stamped on the agent clock just before ``sd.play``; what lies between that stamp
and the sound at the microphone (PortAudio's output buffer, the DAC, the air) is the latency the
front end measures with a click (see :mod:`hilbench_drivers.xylo.chip_afe`).
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

import numpy as np

from hilbench.agent.driver import DriverError
from hilbench.clock import now
from hilbench_drivers.xylo import vendor


def device_listing(sd: ModuleType) -> str:
    """``sounddevice.query_devices()`` as text, or why it cannot be listed."""
    try:
        return str(sd.query_devices()) or "(no audio devices)"
    except Exception as exc:  # PortAudio not initialised, no ALSA, ...
        return f"(cannot list audio devices: {exc})"


class Speaker:
    """One output device; ``device`` is a sounddevice index or name substring (None: default)."""

    def __init__(self, device: str | int | None = None, sd: ModuleType | None = None) -> None:
        self.sd = sd if sd is not None else vendor.sounddevice()
        if isinstance(device, str) and device.isdigit():
            device = int(device)
        self.device = device
        try:
            info = self.sd.query_devices(device, kind="output")
        except Exception as exc:
            raise DriverError(
                f"no audio output device {device!r} for playing samples into the HDK "
                f"microphone ({exc}). Package: sounddevice (PortAudio); install: "
                f"{vendor.SUPPORTED['sounddevice'][1]}. Devices sounddevice sees:\n"
                f"{device_listing(self.sd)}\nChoose one with -o speaker=INDEX|NAME.",
                "missing_sdk") from exc
        if int(info.get("max_output_channels", 0)) < 1:
            raise DriverError(
                f"audio device {info.get('name')!r} has no output channels. Devices "
                f"sounddevice sees:\n{device_listing(self.sd)}\nChoose one with "
                f"-o speaker=INDEX|NAME.", "missing_sdk")
        self.name = str(info.get("name", device))

    def start(self, audio: np.ndarray, sample_rate: int) -> float:
        """Start playing (non-blocking); returns the agent-clock time of the request."""
        data = np.ascontiguousarray(audio, dtype=np.float32)
        peak = float(np.max(np.abs(data), initial=0.0))
        if peak > 1.0:
            raise DriverError(f"playback would clip (peak {peak:.3g} > 1.0 full scale)",
                              "bad_arguments")
        t = now()
        self.sd.play(data, samplerate=int(sample_rate), device=self.device, blocking=False)
        return t

    def wait(self) -> None:
        self.sd.wait()

    def describe(self) -> dict[str, Any]:
        return {"speaker": self.name}
