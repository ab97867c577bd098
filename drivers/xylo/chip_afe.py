"""Pre-processing on the Xylo Audio 2's own analog front end, in real time: the sample is played
into the HDK microphone while the chip's AFE records, and the recorded events go to the SNN core.

Why ``AFESamna`` and not ``XyloMonitor``: the baseline's inference runs through ``XyloSamna`` in
accelerated time with the input events sent over USB, and its single-stream time and on-board
power are per stage. ``AFESamna`` records the AFE's events alone for T·dt seconds, so the
pre-processing stage gets its own real-time window (and its own power window on the AFE rails),
and inference continues exactly as with the host AFE. ``XyloMonitor`` runs AFE→SNN on the chip
in real time as one stage, which would time pre-processing and inference together.

Calls (Rockpool 2.8, ``rockpool/devices/xylo/syns61201/``):
  ``afe_samna.AFESamna(device, config=None, dt=s, auto_calibrate=True, amplify_level="low",
      ...)`` — with ``auto_calibrate`` it runs ``xa2_devkit_utils.apply_afe2_default_config``
      (applies the configuration, ``time.sleep(45)``, then the leakage calibration): about 50 s,
      done once per driver;
  ``AFESamna.evolve(np.zeros([0, T, 0])) -> (raster (T, 16) int, state, {})`` — records T·dt
      seconds of live AFE events (``xa2_devkit_utils.read_afe2_events_blocking``: stopwatch reset,
      event monitor on, ``time.sleep(T·dt)``, monitor off, 0.1 s more; timestamps µs → s) and
      rasterises them at ``dt`` with ``add_events=True``.

One recording: silence (``lead_s``: the AFE's background in a quiet room), then the playback — a
5 ms click, silence up to ``gap_s``, the 1 s sample — then ``tail_s`` for the latency. The
click's first burst of AFE events finds where the playback landed on the AFE's stopwatch: the
sample's window is the 1 s from click + ``gap_s`` (same DAC clock, so exact up to one bin), and
the speaker→AFE latency is the burst's time on the agent clock minus the playback request's.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from hilbench.agent.driver import DriverError
from hilbench.clock import now
from hilbench_drivers.xylo.playback import Speaker

log = logging.getLogger(__name__)

CALIBRATION_S = 50.0  # Rockpool's docstring: "approximately 50 seconds"
CLICK_S = 0.005
CLICK_HZ = 2000.0
CLICK_AMPLITUDE = 0.9
BURST_SIGMAS = 8.0  # a click burst stands this many Poisson sigmas above the background


@dataclass
class Recording:
    """One sample pre-processed on the chip: its events at the network's time step and the
    figures that go into the run reply."""

    raster: np.ndarray
    preprocess_s: float  # the sample's recording window (real time, AFE stopwatch)
    latency_s: float  # playback request (agent clock) -> first AFE burst of the click
    resolution_s: float  # the AFE raster's bin: the latency's resolution
    t_start: float  # the sample's window on the agent clock
    t_end: float
    events: int
    background_hz: float  # events per second per channel in the silent lead

    def reply(self) -> dict[str, Any]:
        return {"preprocess_s": self.preprocess_s,
                "preprocess_latency_s": self.latency_s,
                "preprocess_latency_resolution_s": self.resolution_s,
                "preprocess_t_start": self.t_start, "preprocess_t_end": self.t_end,
                "afe": "chip", "afe_events": self.events,
                "afe_background_hz": self.background_hz}


class ChipFrontEnd:
    """The HDK's AFE through ``AFESamna`` plus a loudspeaker into its microphone."""

    def __init__(self, hdk: Any, afe_samna: type, speaker: Speaker, dt_s: float = 1e-3,
                 lead_s: float = 0.1, gap_s: float = 0.25, tail_s: float = 0.25,
                 max_background_hz: float = 500.0) -> None:
        if not 1e-5 <= dt_s <= 0.01:
            raise DriverError(f"the AFE recording bin must be 10 µs .. 10 ms, got {dt_s} s",
                              "bad_arguments")
        if gap_s <= CLICK_S or lead_s <= 0 or tail_s <= 0:
            raise DriverError("afe lead, tail must be > 0 s and the gap longer than the click",
                              "bad_arguments")
        self.hdk, self.afe_samna, self.speaker = hdk, afe_samna, speaker
        self.dt_s, self.lead_s, self.gap_s, self.tail_s = dt_s, lead_s, gap_s, tail_s
        self.max_background_hz = max_background_hz
        self.afe: Any = None

    # -- calibration (once) ----------------------------------------------------------------------

    def calibrate(self) -> float:
        """Construct ``AFESamna`` with auto-calibration (~50 s on the HDK), logging progress.
        Returns the seconds it took; a second call does nothing."""
        if self.afe is not None:
            return 0.0
        done = threading.Event()
        t0 = time.monotonic()

        def progress() -> None:
            while not done.wait(5.0):
                log.info("calibrating the Xylo AFE: %.0f s of about %.0f s",
                         time.monotonic() - t0, CALIBRATION_S)

        log.info("calibrating the Xylo AFE (AFESamna auto_calibrate, about %.0f s)",
                 CALIBRATION_S)
        ticker = threading.Thread(target=progress, daemon=True, name="afe-calibration")
        ticker.start()
        try:
            self.afe = self.afe_samna(self.hdk, dt=self.dt_s, auto_calibrate=True)
        finally:
            done.set()
            ticker.join()
        took = time.monotonic() - t0
        log.info("Xylo AFE calibrated in %.1f s", took)
        return took

    def check_network(self, network_dt: float) -> int:
        """Bins of the AFE raster per network time step (the network's dt must be a multiple)."""
        factor = network_dt / self.dt_s
        if factor < 1 or abs(factor - round(factor)) > 1e-6:
            raise DriverError(f"the network's dt {network_dt} s is not a multiple of the AFE "
                              f"recording bin {self.dt_s} s (-o afe_dt_ms)", "bad_arguments")
        return round(factor)

    # -- one sample ------------------------------------------------------------------------------

    def playback(self, audio: np.ndarray, sample_rate: int) -> np.ndarray:
        """Click, silence up to ``gap_s``, the sample."""
        n_click = round(CLICK_S * sample_rate)
        t = np.arange(n_click) / sample_rate
        click = CLICK_AMPLITUDE * np.sin(2 * np.pi * CLICK_HZ * t)
        silence = np.zeros(round(self.gap_s * sample_rate) - n_click)
        return np.concatenate([click, silence, audio]).astype(np.float32)

    def record(self, audio: np.ndarray, sample_rate: int, network_dt: float) -> Recording:
        """Play ``audio`` into the microphone while the AFE records; the sample's events."""
        if self.afe is None:
            self.calibrate()
        factor = self.check_network(network_dt)
        sample_s = len(audio) / sample_rate
        steps = round((self.lead_s + self.gap_s + sample_s + self.tail_s) / self.dt_s)
        fine, t0, t_play = self._play_and_record(self.playback(audio, sample_rate),
                                                 sample_rate, steps)
        return self._locate(fine, t0, t_play, round(sample_s / self.dt_s), factor)

    def _play_and_record(self, playback: np.ndarray, sample_rate: int, steps: int
                         ) -> tuple[np.ndarray, float, float]:
        box: dict[str, Any] = {}
        started = threading.Event()

        def record() -> None:
            try:
                box["t0"] = now()
                started.set()
                box["out"] = self.afe.evolve(np.zeros((0, steps, 0)))
            except BaseException as exc:  # handed to the caller below
                box["error"] = exc
                started.set()

        recorder = threading.Thread(target=record, daemon=True, name="afe-record")
        recorder.start()
        started.wait()
        if "error" not in box:
            time.sleep(max(0.0, box["t0"] + self.lead_s - now()))
        try:
            t_play = self.speaker.start(playback, sample_rate)
            self.speaker.wait()
        finally:
            recorder.join(steps * self.dt_s + 30.0)
        if recorder.is_alive():
            raise DriverError("the AFE recording did not return (AFESamna.evolve hung)")
        if "error" in box:
            raise DriverError(f"AFE recording failed: {box['error']}") from box["error"]
        fine = np.asarray(box["out"][0])
        if fine.ndim == 3:
            fine = fine[0]
        if fine.ndim != 2 or fine.shape[0] < steps:
            raise DriverError(f"AFESamna.evolve returned {fine.shape}, expected ({steps}, "
                              "channels)")
        return fine[:steps].astype(np.int64), box["t0"], t_play

    def _locate(self, fine: np.ndarray, t0: float, t_play: float, n_sample: int,
                factor: int) -> Recording:
        """Find the click's burst, then cut the sample's window and bin it to the network."""
        dt = self.dt_s
        counts = fine.sum(axis=1)
        play_bin = min(max(1, int((t_play - t0) / dt)), len(counts) - 1)
        background = counts[:play_bin]
        bg_mean = float(background.mean())
        bg_hz = bg_mean / dt / fine.shape[1]
        if bg_hz > self.max_background_hz:
            raise DriverError(
                f"the AFE fires {bg_hz:.0f} events/s per channel in silence (limit "
                f"{self.max_background_hz:g}): is it calibrated (AFESamna auto_calibrate at "
                "configure) and the room quiet?", "driver_error")
        region = counts[play_bin: play_bin + round(self.gap_s / dt)]
        peak = float(region.max(initial=0))
        floor = bg_mean + BURST_SIGMAS * math.sqrt(bg_mean + 1.0)
        if peak < floor:
            raise DriverError(
                f"no click heard by the AFE within {self.gap_s} s of the playback (peak "
                f"{peak:.0f} events per {dt * 1e3:g} ms bin, background {bg_mean:.1f}): check "
                "the speaker's volume and position, or raise -o afe_gap_s", "driver_error")
        onset = play_bin + int(np.argmax(region >= bg_mean + 0.5 * (peak - bg_mean)))
        start = onset + round(self.gap_s / dt)
        if start + n_sample > len(counts):
            raise DriverError(
                f"the sample's window ends {(start + n_sample - len(counts)) * dt:.3f} s after "
                f"the recording: the speaker→AFE latency is longer than afe_tail_s "
                f"{self.tail_s} s", "driver_error")
        sample = fine[start: start + n_sample]
        raster = sample.reshape(-1, factor, fine.shape[1]).sum(axis=1)
        latency = t0 + onset * dt - t_play
        t_start = t_play + latency + self.gap_s
        return Recording(raster=raster, preprocess_s=n_sample * dt, latency_s=latency,
                         resolution_s=dt, t_start=t_start, t_end=t_start + n_sample * dt,
                         events=int(sample.sum()), background_hz=bg_hz)

    def describe(self) -> dict[str, Any]:
        return {"afe": "chip", "afe_dt_s": self.dt_s, "afe_lead_s": self.lead_s,
                "afe_gap_s": self.gap_s, "afe_tail_s": self.tail_s,
                "afe_calibrated": self.afe is not None, **self.speaker.describe()}
