"""A small synthetic stand-in for the TAU Urban Acoustic Scenes 2020 Mobile development set.

It has exactly the real layout (file names, tab-separated fold files, 10 s 24-bit mono WAVs at
44.1 kHz) so the loader, the demo and the tests exercise the same code paths as the real
data, in seconds and without a 30 GB download. Each scene has its own spectrum (band-limited
noise, tones, modulation, all below 4 kHz so it survives resampling to 8 kHz) over a shared
background, with random gains and jitter: learnable, but not a constant.

Like the real set it also holds what the loader must leave out (other devices, other scenes)
and device-``a`` clips listed in neither fold file, which belong to the test split.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np

from hilbench.workloads.asc.dataset import (
    ARCHIVE_DIR_NAME,
    CLASSES,
    CLIP_SECONDS,
    DEVICE,
    EVALUATE_CSV,
    TRAIN_CSV,
    require_soundfile,
)

_CITIES = ("barcelona", "helsinki", "lisbon", "london", "lyon", "milan", "paris", "prague",
           "stockholm", "vienna")
# Scenes outside the benchmark and devices other than "a": present, and to be ignored.
DISTRACTOR_SCENES = ("metro_station", "shopping_mall")
DISTRACTOR_DEVICES_LISTED = ("b", "c", "s1")
DISTRACTOR_DEVICE_UNLISTED = "s4"
MIN_SAMPLE_RATE = 8000


@dataclass(frozen=True)
class _FixtureFile:
    name: str
    scene: str
    device: str
    identifier: str  # city-location, as in the real meta.csv
    fold: Literal["train", "evaluate", "unlisted"]


def _band(freqs: np.ndarray, low: float, high: float) -> np.ndarray:
    return ((freqs >= low) & (freqs <= high)).astype(np.float64)


def _tone(t: np.ndarray, freq: float, rng: np.random.Generator) -> np.ndarray:
    return np.sin(2 * np.pi * freq * t + rng.uniform(0, 2 * np.pi))


def _airport(freqs: np.ndarray, t: np.ndarray, rng: np.random.Generator) -> tuple:
    """Crowd babble around 300-900 Hz with a syllable-rate flutter and a chime."""
    jitter = rng.uniform(0.9, 1.1)
    shape = _band(freqs, 300 * jitter, 900 * jitter)
    tones = 0.3 * _tone(t, 1200 * rng.uniform(0.97, 1.03), rng)
    envelope = 1 + 0.4 * np.sin(2 * np.pi * rng.uniform(3, 5) * t)
    return shape, tones, envelope


def _street_traffic(freqs: np.ndarray, t: np.ndarray, rng: np.random.Generator) -> tuple:
    """Low rumble (40-250 Hz) swelling as vehicles pass."""
    jitter = rng.uniform(0.9, 1.1)
    shape = 2.0 * _band(freqs, 40 * jitter, 250 * jitter)
    tones = np.zeros_like(t)
    envelope = 1 + 0.8 * np.sin(2 * np.pi * rng.uniform(0.2, 0.5) * t)
    return shape, tones, envelope


def _bus(freqs: np.ndarray, t: np.ndarray, rng: np.random.Generator) -> tuple:
    """Engine harmonics on ~90 Hz plus a 1.5-2 kHz cabin band."""
    f0 = 90 * rng.uniform(0.93, 1.07)
    shape = _band(freqs, 100, 400) + 0.6 * _band(freqs, 1500, 2000)
    tones = sum(0.5 / k * _tone(t, k * f0, rng) for k in (1, 2, 3))
    envelope = np.ones_like(t)
    return shape, tones, envelope


def _park(freqs: np.ndarray, t: np.ndarray, rng: np.random.Generator) -> tuple:
    """Leaves in a 2-3.8 kHz band and bird-like tone bursts near 3 kHz."""
    shape = _band(freqs, 2000, 3800)
    bursts = (np.sin(2 * np.pi * rng.uniform(1.5, 3) * t) > 0.6).astype(np.float64)
    tones = 0.6 * bursts * _tone(t, 3000 * rng.uniform(0.9, 1.1), rng)
    envelope = np.ones_like(t)
    return shape, tones, envelope


_SCENE_RECIPES: dict[str, Callable[..., tuple]] = {
    "airport": _airport,
    "street_traffic": _street_traffic,
    "bus": _bus,
    "park": _park,
}


def _unit_power(shape: np.ndarray) -> np.ndarray:
    """Scale a spectral shape so that noise shaped by it has unit expected power."""
    energy = float(np.sum(shape**2))
    return shape / np.sqrt(energy) if energy > 0 else shape


@dataclass(frozen=True)
class _Grid:
    """Time and frequency axes of one clip, computed once per fixture."""

    sample_rate: int
    t: np.ndarray
    freqs: np.ndarray
    pink: np.ndarray

    @classmethod
    def for_rate(cls, sample_rate: int) -> _Grid:
        length = CLIP_SECONDS * sample_rate
        freqs = np.fft.rfftfreq(length, d=1 / sample_rate)
        return cls(sample_rate, np.arange(length) / sample_rate, freqs,
                   _unit_power(1 / np.sqrt(np.maximum(freqs, 20.0))))


def _synthesise(scene: str | None, grid: _Grid, rng: np.random.Generator) -> np.ndarray:
    """One 10 s clip: a pink-ish background plus the scene's signature, mixed in the frequency
    domain so each clip costs one inverse FFT. ``scene=None`` gives plain white noise, for the
    files the loader must ignore (their content never matters, only that they exist)."""
    if scene is None:
        noise = rng.standard_normal(grid.t.size, dtype=np.float32)
        return (0.1 * noise).astype(np.float32)
    shape, tones, envelope = _SCENE_RECIPES[scene](grid.freqs, grid.t, rng)
    snr = 10 ** (rng.uniform(0, 10) / 20)  # scene 0-10 dB above the background
    bins = grid.freqs.size
    spectrum = (grid.pink + snr * _unit_power(shape)) * (
        rng.standard_normal(bins) + 1j * rng.standard_normal(bins)
    )
    audio = np.fft.irfft(spectrum, n=grid.t.size)
    audio = audio / float(np.sqrt(np.mean(audio**2))) * envelope + snr * tones
    gain = 10 ** (rng.uniform(-6, 0) / 20)
    return (0.5 * gain * audio / np.max(np.abs(audio))).astype(np.float32)


def _plan(
    clips_per_class_train: int, clips_per_class_test: int, extra_unlisted_per_class: int
) -> list[_FixtureFile]:
    """Every file of the fixture: benchmark clips first, then the ones to be ignored."""
    files: list[_FixtureFile] = []
    counter = 0

    def add(scene: str, fold: Literal["train", "evaluate", "unlisted"], devices: tuple[str, ...]
            ) -> None:
        nonlocal counter
        city = _CITIES[counter % len(_CITIES)]
        location, segment = 1000 + 7 * counter, 40000 + 13 * counter
        counter += 1
        for device in devices:
            files.append(_FixtureFile(f"{scene}-{city}-{location}-{segment}-{device}.wav",
                                      scene, device, f"{city}-{location}", fold))

    for label, scene in enumerate(CLASSES):
        other_device = DISTRACTOR_DEVICES_LISTED[label % len(DISTRACTOR_DEVICES_LISTED)]
        for i in range(clips_per_class_train):
            add(scene, "train", (DEVICE, other_device) if i == 0 else (DEVICE,))
        for _ in range(clips_per_class_test):
            add(scene, "evaluate", (DEVICE,))
        for _ in range(extra_unlisted_per_class):
            add(scene, "unlisted", (DEVICE,))
        add(scene, "unlisted", (DISTRACTOR_DEVICE_UNLISTED,))
    metro, mall = DISTRACTOR_SCENES
    add(metro, "train", (DEVICE, "b"))
    add(metro, "unlisted", (DEVICE,))
    add(mall, "evaluate", (DEVICE, "s2"))
    add(mall, "unlisted", (DEVICE,))
    return files


def _write_tsv(path: Path, header: tuple[str, ...], rows: list[tuple[str, ...]]) -> None:
    lines = ["\t".join(header), *("\t".join(row) for row in rows)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def make_fixture(
    root: str | os.PathLike[str],
    clips_per_class_train: int = 4,
    clips_per_class_test: int = 1,
    extra_unlisted_per_class: int = 1,
    seed: int = 0,
    sample_rate: int = 44100,
    layout: Literal["dcase", "flat"] = "dcase",
) -> Path:
    """Write a synthetic ASC data set under ``root`` and return the directory to load from.

    Train gets ``clips_per_class_train`` device-``a`` clips per scene; test gets
    ``clips_per_class_test`` listed ones plus ``extra_unlisted_per_class`` listed in neither
    CSV; each clip is ten slices. The same arguments give byte-identical files.
    ``layout="dcase"`` writes ``evaluation_setup/`` and ``audio/`` like the archives;
    ``"flat"`` writes the CSVs in ``root`` and the WAVs in ``root/raw/`` like the NeuroBench
    download script.
    """
    if min(clips_per_class_train, clips_per_class_test, extra_unlisted_per_class) < 0:
        raise ValueError("clip counts must be >= 0")
    if clips_per_class_train < 1:
        raise ValueError("clips_per_class_train must be >= 1: a data set needs training clips")
    if sample_rate < MIN_SAMPLE_RATE:
        raise ValueError(f"sample_rate must be >= {MIN_SAMPLE_RATE} Hz (scene spectra reach "
                         f"4 kHz), got {sample_rate}")
    if layout not in ("dcase", "flat"):
        raise ValueError(f"layout must be 'dcase' or 'flat', got {layout!r}")
    sf = require_soundfile()

    root = Path(root)
    if layout == "dcase":
        meta_dir, audio_dir = root / "evaluation_setup", root / "audio"
    else:
        meta_dir, audio_dir = root, root / "raw"
    meta_dir.mkdir(parents=True, exist_ok=True)
    audio_dir.mkdir(parents=True, exist_ok=True)

    rng = np.random.default_rng(seed)
    grid = _Grid.for_rate(sample_rate)
    files = _plan(clips_per_class_train, clips_per_class_test, extra_unlisted_per_class)
    for entry in files:
        scene = entry.scene if entry.device == DEVICE and entry.scene in CLASSES else None
        audio = _synthesise(scene, grid, rng)
        sf.write(str(audio_dir / entry.name), audio, sample_rate, subtype="PCM_24", format="WAV")

    def rows(fold: str) -> list[tuple[str, str]]:
        return sorted((f"audio/{f.name}", f.scene) for f in files if f.fold == fold)

    _write_tsv(meta_dir / TRAIN_CSV, ("filename", "scene_label"), rows("train"))
    _write_tsv(meta_dir / EVALUATE_CSV, ("filename", "scene_label"), rows("evaluate"))
    _write_tsv(meta_dir / "fold1_test.csv", ("filename",),
               [(name,) for name, _ in rows("evaluate")])
    meta_rows = sorted((f"audio/{f.name}", f.scene, f.identifier, f.device) for f in files)
    _write_tsv(root / "meta.csv", ("filename", "scene_label", "identifier", "source_label"),
               meta_rows)
    (root / "FIXTURE.txt").write_text(
        f"Synthetic stand-in for {ARCHIVE_DIR_NAME}, written by hilbench make_fixture "
        f"(seed={seed}, {sample_rate} Hz, layout={layout}). Not real recordings.\n",
        encoding="utf-8",
    )
    return root
