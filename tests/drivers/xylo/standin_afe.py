"""A stand-in for the Xylo Audio 2's analog front end (Rockpool 2.8 ``AFESamna``) and for the
host loudspeaker (``sounddevice``), joined by a room: what the speaker plays reaches the
microphone ``LATENCY_S`` later, and the AFE's events come from that sound, so the driver's
latency measurement, stamping and cropping are checked against a known truth.

Sources of the names, arguments and units:
- ``rockpool/devices/xylo/syns61201/afe_samna.py``, ``AFESamna.__init__(device, config=None,
  dt=1e-3, auto_calibrate=False, amplify_level="low", change_count=None,
  hibernation_mode=False, divisive_norm=False, divisive_norm_params={},
  calibration_params={}, read_register=False, *args, **kwargs)``; ``device is None`` raises
  ``ValueError``; 16 output channels (``len(config.analog_top.channels)``);
  ``AFESamna.evolve(input_data, record=False) -> (raster, state, {})``: ``input_data`` ``[0, T, 0]``
  (``Module._auto_batch``: a 1-D ``(T,)`` or 2-D ``(T, 0)`` array is batched too; the last
  dimension must be ``size_in`` = 0); records ``T * dt`` seconds;
- ``syns61201/xa2_devkit_utils.py``: ``apply_afe2_default_config`` (the auto-calibration:
  ``time.sleep(45)`` then leakage calibration; without it the AFE's channels leak events in
  silence), ``read_afe2_events_blocking`` (stopwatch reset, ``time.sleep(duration)``, 0.1 s
  more, timestamps µs -> s, events after ``duration`` dropped);
- python-sounddevice (https://python-sounddevice.readthedocs.io/): ``query_devices(device=None,
  kind=None)`` (``kind="output"`` with no default output raises ``PortAudioError``; a name that
  matches nothing raises ``ValueError``), ``play(data, samplerate=None, mapping=None,
  blocking=False, loop=False, **kwargs)`` (``samplerate=None`` plays at the device's default
  rate), ``wait(ignore_errors=True)``, ``stop()``.
Calibration takes ``CALIBRATION_S`` here instead of ~50 s.
"""

from __future__ import annotations

import threading
import time
import types
from typing import Any

import numpy as np

from hilbench.clock import now

LATENCY_S = 0.0237  # speaker request -> sound at the microphone (buffer, DAC, air)
CALIBRATION_S = 0.2
CHANNELS = 16
GAIN_HZ = 4000.0  # AFE events per second per channel per unit RMS of the sound
LEAK_HZ = 3000.0  # events per second per channel of an uncalibrated AFE in silence
SUB_S = 1e-4  # the room's time grid
DEVICE_RATE = 48000.0
# the AFE rails draw this much more while the AFE's event monitor records
AFE_EXTRA_W = {"LogicAfe": 0.000012, "IoAfe": 0.000004}


class Room:
    """The sounds that reach the microphone: (arrival on the agent clock, audio, rate)."""

    def __init__(self) -> None:
        self.sounds: list[tuple[float, np.ndarray, float]] = []
        self.recordings: list[dict[str, Any]] = []
        self.recording_intervals: list[tuple[float, float]] = []  # time.monotonic, for power
        self._lock = threading.Lock()

    def add(self, arrival: float, audio: np.ndarray, rate: float) -> None:
        with self._lock:
            self.sounds.append((arrival, audio, rate))

    def recording(self, t: float) -> bool:
        return any(a <= t <= b for a, b in self.recording_intervals)

    def events(self, t0: float, duration: float, calibrated: bool
               ) -> tuple[np.ndarray, np.ndarray]:
        """AFE events (timestamps s from ``t0``, channels) from the sound in the window: each
        channel integrates ``GAIN_HZ * gain_c * RMS`` and fires at every whole event."""
        n = int(np.ceil(duration / SUB_S))
        power = np.zeros(n)
        count = np.zeros(n)
        with self._lock:
            sounds = list(self.sounds)
        for arrival, audio, rate in sounds:
            idx = np.floor((arrival + np.arange(len(audio)) / rate - t0) / SUB_S).astype(int)
            keep = (idx >= 0) & (idx < n)
            power += np.bincount(idx[keep], weights=audio[keep] ** 2, minlength=n)
            count += np.bincount(idx[keep], minlength=n)
        rms = np.sqrt(power / np.maximum(count, 1))
        stamps, chans = [], []
        for c in range(CHANNELS):
            rate_hz = GAIN_HZ * (0.5 + c / CHANNELS) * rms + (0.0 if calibrated else LEAK_HZ)
            fired = np.diff(np.floor(np.cumsum(rate_hz * SUB_S)), prepend=0).astype(int)
            at = np.repeat(np.arange(n), fired) * SUB_S + SUB_S / 2
            stamps.append(at)
            chans.append(np.full(len(at), c))
        t = np.concatenate(stamps)
        ch = np.concatenate(chans)
        order = np.argsort(t, kind="stable")
        keep = t[order] <= duration
        return t[order][keep], ch[order][keep]


def make_afe_samna(room: Room, calls: Any, board: Any) -> type:
    class AFESamna:
        def __init__(self, device, config=None, dt=1e-3, auto_calibrate=False,
                     amplify_level="low", change_count=None, hibernation_mode=False,
                     divisive_norm=False, divisive_norm_params=None, calibration_params=None,
                     read_register=False, *args, **kwargs):
            if device is None or device is not board:
                raise ValueError("`device` must be a valid, opened Xylo AFE V2 HDK")
            calls.add("AFESamna", {"dt": dt, "auto_calibrate": auto_calibrate})
            if auto_calibrate:
                time.sleep(CALIBRATION_S)
            self.dt = dt
            self.calibrated = bool(auto_calibrate)
            self.size_out = CHANNELS

        def evolve(self, input_data, record=False):
            x = np.asarray(input_data, dtype=float)
            if x.ndim == 1:
                x = x[None, :, None]
            elif x.ndim == 2:
                x = x[None]
            if x.ndim != 3 or x.shape[-1] != 0:
                raise ValueError(f"Input dimensions {x.shape} do not match module size_in 0")
            steps = x.shape[1]
            duration = steps * self.dt
            if duration > 120:
                raise ValueError(f"would record {duration} s (dt is in seconds)")
            calls.add("AFESamna.evolve", {"steps": steps, "duration_s": duration})
            t0, mono0 = now(), time.monotonic()
            time.sleep(duration)
            room.recording_intervals.append((mono0, time.monotonic()))
            time.sleep(0.1)
            stamps, channels = room.events(t0, duration, self.calibrated)
            raster = np.zeros((steps, CHANNELS), dtype=int)
            np.add.at(raster, (np.minimum((stamps / self.dt).astype(int), steps - 1),
                               channels), 1)
            room.recordings.append({"t0": t0, "duration_s": duration, "raster": raster})
            return raster, {}, {}

    return AFESamna


class PortAudioError(Exception):
    pass


class DeviceList(tuple):
    def __str__(self) -> str:
        return "\n".join(f"  {i} {d['name']}, ALSA ({d['max_input_channels']} in, "
                         f"{d['max_output_channels']} out)" for i, d in enumerate(self))


def make_sounddevice(room: Room, calls: Any, *, outputs: bool = True) -> Any:
    devices = DeviceList([
        {"name": "stand-in USB microphone", "max_input_channels": 1,
         "max_output_channels": 0, "default_samplerate": DEVICE_RATE},
        *([{"name": "stand-in USB speaker", "max_input_channels": 0,
            "max_output_channels": 2, "default_samplerate": DEVICE_RATE}] if outputs else []),
    ])
    state = {"end": 0.0}

    def query_devices(device=None, kind=None):
        if device is None and kind is None:
            return devices
        if device is None:
            key = "max_output_channels" if kind == "output" else "max_input_channels"
            for d in devices:
                if d[key] > 0:
                    return d
            raise PortAudioError("Error querying device -1")
        if isinstance(device, int):
            if 0 <= device < len(devices):
                return devices[device]
            raise PortAudioError(f"Error querying device {device}")
        found = [d for d in devices if device.lower() in d["name"].lower()]
        if not found:
            raise ValueError(f"No {kind or ''} device matching {device!r}")
        return found[0]

    def play(data, samplerate=None, mapping=None, blocking=False, loop=False, **kwargs):
        t = now()
        audio = np.asarray(data, dtype=float)
        if audio.ndim == 2:
            audio = audio[:, 0]
        rate = float(samplerate) if samplerate else DEVICE_RATE
        calls.add("sd.play", {"samplerate": samplerate, "frames": len(audio),
                              "device": kwargs.get("device"), "blocking": blocking,
                              "peak": float(np.abs(audio).max(initial=0))})
        room.add(t + LATENCY_S, np.clip(audio, -1, 1), rate)
        room.last_play = t
        state["end"] = t + LATENCY_S + len(audio) / rate
        if blocking:
            wait()

    def wait(ignore_errors=True):
        calls.add("sd.wait")
        time.sleep(max(0.0, state["end"] - now()))

    def stop(ignore_errors=True):
        state["end"] = now()

    return types.SimpleNamespace(query_devices=query_devices, play=play, wait=wait, stop=stop,
                                 PortAudioError=PortAudioError,
                                 default=types.SimpleNamespace(device=[None, None],
                                                               samplerate=None))
