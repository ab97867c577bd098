"""A stand-in for the samna and Rockpool 2.8 objects the Xylo hardware path calls.

Names, arguments and return types follow Rockpool 2.8's source (``rockpool/devices/xylo``):
- ``helper.find_xylo_hdks() -> (hdks, support_modules, versions)``;
- ``syns61201/xylo_samna.py``: ``config_from_specification(weights_in, weights_out, weights_rec,
  dash_mem, dash_mem_out, dash_syn, dash_syn_2, dash_syn_out, threshold, threshold_out,
  bias_hidden, bias_out, weight_shift_in, weight_shift_rec, weight_shift_out, aliases, *args,
  **kwargs) -> (config, is_valid, message)``; ``XyloSamna(device, config, dt, output_mode,
  power_frequency)``; ``XyloSamna.evolve(input (T, Nin) int, record, read_timeout,
  record_power) -> (output (T, Nout), {}, record_dict)``, at most 15 events per bin;
- ``syns61201/xa2_devkit_utils.py``: ``set_xylo_core_clock_freq(device, desired_freq_MHz) ->
  float`` (100 / (2 (wait + 1)) MHz), ``set_power_measure(hdk, frequency) -> (power_buf,
  power_monitor)``; ``power_buf.get_events()`` drains events with ``channel`` and ``value`` (W);
- ``samna.xyloA2TestBoard.MeasurementChannels`` with ``Io``, ``Logic``, ``LogicAfe``, ``IoAfe``.
The stand-in chip answers deterministically (output channel = input channel with most events
mod Nout) and its power monitor produces events at the set rate with known watts per rail, so
the tests know the true answer and the true power. The chip's analog front end and the host
loudspeaker (``AFESamna``, ``sounddevice``) are in ``standin_afe.py``.
"""

from __future__ import annotations

import time
import types
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from tests.drivers.xylo.standin_afe import AFE_EXTRA_W, Room, make_afe_samna, make_sounddevice

RAIL_WATTS = {"Io": 0.000110, "Logic": 0.000180, "LogicAfe": 0.000040, "IoAfe": 0.000021}
CHANNEL_IDS = {"Io": 0, "Logic": 1, "LogicAfe": 2, "IoAfe": 3}
# On-board power while the SNN core computes: the Logic rail rises.
ACTIVE_EXTRA_W = {"Logic": 0.000341}


@dataclass
class PowerEvent:
    channel: int
    value: float
    timestamp: int = 0


@dataclass
class Calls:
    log: list[tuple[str, Any]] = field(default_factory=list)

    def add(self, name: str, detail: Any = None) -> None:
        self.log.append((name, detail))

    def names(self) -> list[str]:
        return [n for n, _ in self.log]


class PowerBuffer:
    """Events at ``frequency`` Hz on every rail, generated from the wall clock when drained."""

    def __init__(self, board: Board, frequency: float) -> None:
        self.board, self.frequency = board, frequency
        self._last = time.monotonic()

    def get_events(self) -> list[PowerEvent]:
        t = time.monotonic()
        n = int((t - self._last) * self.frequency)
        events = []
        for k in range(1, n + 1):
            t = self._last + k / self.frequency
            busy = self.board.was_busy(t)
            recording = self.board.room.recording(t)
            for rail, watts in RAIL_WATTS.items():
                extra = ACTIVE_EXTRA_W.get(rail, 0.0) if busy else 0.0
                extra += AFE_EXTRA_W.get(rail, 0.0) if recording else 0.0
                events.append(PowerEvent(CHANNEL_IDS[rail], watts + extra))
        self._last += n / self.frequency
        return events


class Board:
    """The HDK: which clock wait period it was given, whether the SNN core is busy."""

    def __init__(self, calls: Calls) -> None:
        self.calls = calls
        self.wait_period: int | None = None
        self.busy_intervals: list[tuple[float, float]] = []
        self.room = Room()  # the HDK microphone's surroundings
        self.inputs: list[np.ndarray] = []  # every raster XyloSamna.evolve received

    def was_busy(self, t: float) -> bool:
        return any(a <= t <= b for a, b in self.busy_intervals)


def make_modules(calls: Calls, *, boards: int = 1, version: str = "syns61201",
                 evolve_s: float = 0.02, speaker: bool = True) -> Any:
    """A ``VendorModules``-shaped object: ``samna``, ``rockpool.devices.xylo`` and
    ``sounddevice`` stand-ins (``speaker=False``: no audio output device)."""
    board = Board(calls)

    def set_xylo_core_clock_freq(device: Board, desired_freq_MHz: float) -> float:
        wait_period = int(round(100 / desired_freq_MHz) / 2 - 1)
        device.wait_period = wait_period
        calls.add("set_xylo_core_clock_freq", desired_freq_MHz)
        return 100 / (2 * (wait_period + 1))

    def set_power_measure(hdk: Board, frequency: float = 5.0):
        calls.add("set_power_measure", frequency)
        return PowerBuffer(hdk, frequency), types.SimpleNamespace(
            start_auto_power_measurement=lambda f: None)

    def config_from_specification(weights_in, weights_out, weights_rec=None, dash_mem=None,
                                  dash_mem_out=None, dash_syn=None, dash_syn_2=None,
                                  dash_syn_out=None, threshold=None, threshold_out=None,
                                  bias_hidden=None, bias_out=None, weight_shift_in=0,
                                  weight_shift_rec=0, weight_shift_out=0, aliases=None,
                                  *args, **kwargs):
        calls.add("config_from_specification", {"kwargs": sorted(kwargs),
                                                "bias_hidden": bias_hidden is not None})
        if weights_in.dtype.kind not in "ui" or weights_out.dtype.kind not in "ui":
            return None, False, "weights must be integers"
        config = types.SimpleNamespace(
            input=types.SimpleNamespace(weights=np.asarray(weights_in)[:, :, 0]),
            readout=types.SimpleNamespace(weights=np.asarray(weights_out)),
            synapse2_enable=np.asarray(weights_in).shape[2] > 1)
        return config, True, ""

    class XyloSamna:
        def __init__(self, device, config=None, dt=1e-3, output_mode="Spike",
                     power_frequency=5.0, *args, **kwargs):
            if device is not board:
                raise ValueError("`device` must be a valid, opened Xylo HDK device.")
            calls.add("XyloSamna", {"dt": dt, "output_mode": output_mode,
                                    "power_frequency": power_frequency})
            self.config = config
            self.dt = dt
            self.n_out = np.shape(config.readout.weights)[1]

        def evolve(self, input, record=False, read_timeout=None, record_power=False,
                   *args, **kwargs):
            raster = np.asarray(input)
            if raster.dtype.kind not in "ui" or raster.ndim != 2:
                raise TypeError(f"input must be an integer raster (T, Nin), got {raster.dtype}")
            if raster.max(initial=0) > 15:
                raise ValueError("Up to 15 input events can be sent per bin")
            calls.add("evolve", raster.shape)
            board.inputs.append(raster.copy())
            t0 = time.monotonic()
            time.sleep(evolve_s)
            board.busy_intervals.append((t0, time.monotonic()))
            out = np.zeros((raster.shape[0], self.n_out), dtype=int)
            winner = int(np.argmax(raster.sum(axis=0))) % self.n_out
            out[:, winner] = 1
            return out, {}, {}

    syns61201 = types.SimpleNamespace(
        config_from_specification=config_from_specification,
        XyloSamna=XyloSamna,
        AFESamna=make_afe_samna(board.room, calls, board),
        xa2_devkit_utils=types.SimpleNamespace(
            set_xylo_core_clock_freq=set_xylo_core_clock_freq,
            set_power_measure=set_power_measure),
    )

    def find_xylo_hdks():
        calls.add("find_xylo_hdks")
        n = boards
        return [board] * n, [syns61201] * n, [version] * n

    samna = types.SimpleNamespace(xyloA2TestBoard=types.SimpleNamespace(
        MeasurementChannels=types.SimpleNamespace(**CHANNEL_IDS)))
    xylo = types.SimpleNamespace(find_xylo_hdks=find_xylo_hdks)
    sounddevice = make_sounddevice(board.room, calls, outputs=speaker)
    return types.SimpleNamespace(samna=samna, xylo=xylo, board=board, sounddevice=sounddevice)
