"""The input a packaged ASC graph expects, for a sample of audio: its spike raster.

The graph's input is the Xylo Audio 2 analog front end's spike counts as Rockpool's AFESim makes
them (the graph's metadata says how). AFESim needs Rockpool (numpy < 2, so ``.venv-xylo``) and
takes ~1.7 s per sample, so hilbench ships the rasters of the synthetic fixture's test split
(``asc-snn-fixture-test-spikes.npz``, made by ``hilbench_drivers.xylo.afe.HostFrontEnd``) keyed
by the SHA-256 of each sample's float32 audio: the CPU device and the orchestrator's reference
execution look a sample up by its audio, so they run on exactly the raster AFESim made for it,
and a sample without one is refused with one line (never another raster).
"""

from __future__ import annotations

import hashlib
from functools import cache

import numpy as np

from hilbench.nir.graph import NirFileError
from hilbench.workloads.asc.nir.graph import AscGraph, packaged_test_spikes


def audio_sha256(audio: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(audio, dtype=np.float32).tobytes()).hexdigest()


@cache
def _packaged() -> tuple[dict[str, int], np.ndarray, dict]:
    samples = packaged_test_spikes()
    hashes = samples.provenance.get("audio_sha256", [])
    return {h: i for i, h in enumerate(hashes)}, samples.rasters, samples.provenance


class SpikeInputs:
    """Audio → the graph's input raster (steps, channels), for one graph's front end."""

    def __init__(self, asc: AscGraph) -> None:
        self.asc = asc
        index, rasters, provenance = _packaged()
        stated = asc.meta["input"]
        same_front_end = (provenance.get("afe") == stated.get("afe")
                          and float(provenance.get("dt", -1)) == float(stated["dt"])
                          and int(provenance.get("sample_rate", -1)) == int(stated["sample_rate"]))
        self._index = index if same_front_end else {}
        self._rasters = rasters
        self.source = ("packaged AFESim rasters of the synthetic fixture's test split "
                       f"(fixture seed {provenance.get('fixture_seed')}, Rockpool "
                       f"{provenance.get('rockpool')})")

    def raster(self, audio: np.ndarray) -> np.ndarray:
        """The graph's input for this audio; NirFileError (one line) when hilbench has none."""
        key = audio_sha256(audio)
        i = self._index.get(key)
        if i is None:
            raise NirFileError(
                f"no input spike raster for audio {key[:12]}…: the graph's input is "
                f"{self.asc.meta['input']['kind']} from the Xylo AFE (AFESim); hilbench ships "
                "them for the synthetic fixture's test split (fixture = true, fixture_seed = 0, "
                "sample_rate = 16000) only")
        raster = self._rasters[i]
        if raster.shape != (self.asc.steps_per_sample, self.asc.input_channels):
            raise NirFileError(f"packaged raster of shape {raster.shape}; the graph takes "
                               f"({self.asc.steps_per_sample}, {self.asc.input_channels})")
        return raster
