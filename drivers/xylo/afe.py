"""Audio → input spikes on the host: Rockpool's ``AFESim`` (the Xylo Audio 2 analog front end),
rasterised to the network's time step, cached per sample by content hash.

AFESim needs audio at >= 110 kHz and takes about 1.7 s per 1 s of audio on a laptop core, so
the test split would take hours each run; the spikes depend only on the audio and the AFE
settings, so they are computed once and kept in ``<cache>/xylo-afe/<sha256>.npy``. The key
covers the audio bytes, the settings, the time step and the Rockpool version.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import time
from dataclasses import dataclass
from math import gcd
from pathlib import Path
from typing import Any

import numpy as np

from hilbench.private_files import private_dir
from hilbench_drivers.xylo import vendor
from hilbench_drivers.xylo.network import MAX_INPUT_EVENTS_PER_STEP, AfeSettings


def default_cache_dir() -> Path:
    """``$XDG_CACHE_HOME/hilbench/xylo-afe``, else ``~/.cache/hilbench/xylo-afe``."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "hilbench" / "xylo-afe"


def rasterise(spikes: np.ndarray, fs: int, dt: float, steps: int) -> np.ndarray:
    """Sum AFE events (samples at ``fs``, channels) into ``steps`` bins of ``dt`` seconds,
    clipped to the 15 input events Xylo accepts per channel and step."""
    per_step = fs * dt
    edges = np.round(np.arange(steps + 1) * per_step).astype(np.int64)
    edges = np.minimum(edges, spikes.shape[0])
    cumulative = np.concatenate(
        (np.zeros((1, spikes.shape[1]), np.int64), np.cumsum(spikes, axis=0, dtype=np.int64)))
    counts = cumulative[edges[1:]] - cumulative[edges[:-1]]
    return np.clip(counts, 0, MAX_INPUT_EVENTS_PER_STEP).astype(np.uint8)


@dataclass
class AfeResult:
    raster: np.ndarray  # (steps, channels) uint8 input events per step
    cached: bool
    host_s: float  # host time spent (reading the cache, or simulating)
    key: str


class HostFrontEnd:
    """AFESim on the host for one network's settings (time step, channels, audio rate)."""

    def __init__(self, settings: AfeSettings, dt: float, sample_rate: int,
                 cache_dir: str | Path | None = None) -> None:
        self.settings = settings
        self.dt = dt
        self.sample_rate = sample_rate
        self.cache_dir = Path(cache_dir) if cache_dir else default_cache_dir()

    @property
    def _rockpool_version(self) -> str:
        """Part of the cache key; Rockpool is imported only when spikes are first needed."""
        return str(vendor.require("rockpool").__version__)

    def key(self, audio: np.ndarray) -> str:
        h = hashlib.sha256()
        h.update(json.dumps({"afe": self.settings.to_dict(), "dt": self.dt,
                             "rate": self.sample_rate, "rockpool": self._rockpool_version},
                            sort_keys=True).encode())
        h.update(np.ascontiguousarray(audio, dtype=np.float32).tobytes())
        return h.hexdigest()

    def spikes(self, audio: np.ndarray) -> AfeResult:
        """Input events for one sample, from the cache when this audio was seen before."""
        t0 = time.perf_counter()
        key = self.key(audio)
        path = self.cache_dir / f"{key}.npy"
        if path.is_file():
            try:
                raster = np.load(path, allow_pickle=False)
                return AfeResult(raster, True, time.perf_counter() - t0, key)
            except (OSError, ValueError):
                path.unlink(missing_ok=True)  # a damaged cache entry is recomputed
        raster = self.simulate(audio)
        self._store(path, raster)
        return AfeResult(raster, False, time.perf_counter() - t0, key)

    def simulate(self, audio: np.ndarray) -> np.ndarray:
        """Resample to the AFE rate, scale to the set RMS voltage, run AFESim (fresh, fixed seed),
        rasterise to ``dt``."""
        from scipy.signal import resample_poly

        x = vendor.rockpool_xylo_a2()
        audio = np.asarray(audio, dtype=np.float64)
        fs = self.settings.fs
        g = gcd(fs, self.sample_rate)
        resampled = resample_poly(audio, fs // g, self.sample_rate // g)
        rms = float(np.sqrt(np.mean(resampled**2))) if resampled.size else 0.0
        if rms > 0:  # AFESim takes Volts at the microphone, at most 112 mV RMS
            resampled = resampled * (self.settings.input_rms_v / rms)
        afe = x.AFESim(fs=fs, raster_period=self.dt,
                       max_spike_per_raster_period=MAX_INPUT_EVENTS_PER_STEP,
                       add_noise=self.settings.add_noise, seed=self.settings.seed)
        events, _, _ = afe.evolve(resampled)
        steps = round(len(audio) / self.sample_rate / self.dt)
        return rasterise(np.asarray(events), fs, self.dt, steps)

    def _store(self, path: Path, raster: np.ndarray) -> None:
        private_dir(path.parent, parents=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".partial")
        try:
            with os.fdopen(fd, "wb") as fh:
                np.save(fh, raster, allow_pickle=False)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    def describe(self) -> dict[str, Any]:
        return {"simulator": "rockpool AFESim (syns65300.afe_sim, used by syns61201)",
                **self.settings.to_dict(), "dt": self.dt, "audio_rate": self.sample_rate,
                "cache": str(self.cache_dir), "rockpool": self._rockpool_version}
