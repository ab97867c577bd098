"""MFE (log mel filterbank energy) pre-processing for the ASC CPU baseline.

The Arduino baseline in the NeuroBench paper feeds an Edge Impulse "Audio (MFE)" block into a
small CNN. This module reproduces that block so that our CPU baseline and the Arduino firmware see
the same features. What we matched (Edge Impulse ``processing-blocks/mfe``, implementation
version 4, default parameters):

- 16 kHz input scaled to [-1, 1]; pre-emphasis ``y[n] = x[n] - 0.98 * x[n-1]``;
- frames of 0.02 s (320 samples) every 0.01 s (160 samples), no padding: 99 frames per 1 s;
- rectangular window; FFT length 256 (``rfft(frame, n=256)``, so only the first 256 samples of
  each 320-sample frame enter the FFT, exactly as the Edge Impulse block does);
- power spectrum ``|X[k]|^2 / 256`` for bins 0..128;
- 40 triangular mel filters between 0 Hz and the Nyquist frequency, mel(f) = 1127 ln(1 + f/700),
  filter edges on FFT bins ``floor((fft_length + 1) * hz / sample_rate)`` with the top edge
  lowered by 0.001 Hz (the Edge Impulse SDK does the same so that every target agrees);
- energies clipped at 1e-30, converted to dB, mapped with the noise floor -52 dB to
  ``(dB + 52) / (52 + 12)`` and clipped to [0, 1].

What we chose differently: the pre-emphasis treats the sample before the first as zero (Edge
Impulse wraps the last sample round with ``np.roll``; a streaming firmware cannot). Everything is
float32 except the filterbank construction (float64, then stored as float32).

The boundary to the integer model is :func:`quantise_features`: ``q = clip(round_half_even(
v * 256), 0, 255) - 128``, i.e. int8 with scale 1/256 and zero point -128 (Edge Impulse quantises
to uint8 with ``round(v * 256)`` the same way; we shift by -128 to get int8).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, fields

import numpy as np

# The int8 quantisation of features, fixed so firmware and model agree without negotiation.
FEATURE_SCALE = 1.0 / 256.0
FEATURE_ZERO_POINT = -128


@dataclass(frozen=True)
class MfeConfig:
    """Parameters of the MFE block; defaults are the Edge Impulse MFE defaults (see module doc)."""

    sample_rate: int = 16000
    frame_length_s: float = 0.02
    frame_stride_s: float = 0.01
    num_filters: int = 40
    fft_length: int = 256
    low_frequency_hz: float = 0.0
    high_frequency_hz: float = 0.0  # 0 means sample_rate / 2
    noise_floor_db: float = -52.0
    preemphasis: float = 0.98

    def __post_init__(self) -> None:
        if self.fft_length < 2 or self.fft_length & (self.fft_length - 1):
            raise ValueError(f"MfeConfig.fft_length must be a power of two, got {self.fft_length}")
        if self.num_filters < 2:
            raise ValueError(f"MfeConfig.num_filters must be at least 2, got {self.num_filters}")
        if self.frame_stride_samples < 1 or self.frame_samples < 1:
            raise ValueError(
                f"MfeConfig frame length {self.frame_length_s} s / stride {self.frame_stride_s} s "
                f"give no samples at {self.sample_rate} Hz"
            )
        if not 0 <= self.low_frequency_hz < self.top_frequency_hz <= self.sample_rate / 2:
            raise ValueError(
                f"MfeConfig band {self.low_frequency_hz}..{self.top_frequency_hz} Hz is not inside "
                f"0..{self.sample_rate / 2} Hz"
            )
        if self.noise_floor_db >= 0:
            raise ValueError(
                f"MfeConfig.noise_floor_db must be negative, got {self.noise_floor_db}"
            )

    @property
    def frame_samples(self) -> int:
        return _samples(self.sample_rate * self.frame_length_s)

    @property
    def frame_stride_samples(self) -> int:
        return _samples(self.sample_rate * self.frame_stride_s)

    @property
    def top_frequency_hz(self) -> float:
        return self.high_frequency_hz or self.sample_rate / 2

    def num_frames(self, num_samples: int | None = None) -> int:
        """Frames produced from ``num_samples`` (default: one second of audio)."""
        n = self.sample_rate if num_samples is None else num_samples
        return max(0, (n - self.frame_samples) // self.frame_stride_samples + 1)

    def to_dict(self) -> dict[str, float | int]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, float | int]) -> MfeConfig:
        known = {f.name for f in fields(cls)}
        unknown = set(data) - known
        if unknown:
            raise ValueError(f"unknown MfeConfig field(s): {', '.join(sorted(unknown))}")
        return cls(**data)  # type: ignore[arg-type]


def _samples(value: float) -> int:
    """Samples from seconds * rate, robust to float noise such as 0.02 * 16000 = 320.00000001."""
    nearest = round(value)
    return int(nearest) if abs(value - nearest) < 1e-3 else math.ceil(value)


def _hz_to_mel(hz: np.ndarray) -> np.ndarray:
    return 1127.0 * np.log(1.0 + hz / 700.0)


def _mel_to_hz(mel: np.ndarray) -> np.ndarray:
    return 700.0 * (np.exp(mel / 1127.0) - 1.0)


def mel_filterbank(cfg: MfeConfig) -> np.ndarray:
    """Triangular mel filters as a float32 matrix (num_filters, fft_length // 2 + 1).

    Filter i rises linearly from bin edge[i] (weight 0) to edge[i+1] (weight 1) and falls to
    edge[i+2] (weight 0); a filter whose left and centre edges coincide starts at weight 1.
    """
    mels = np.linspace(
        _hz_to_mel(np.float64(cfg.low_frequency_hz)),
        _hz_to_mel(np.float64(cfg.top_frequency_hz)),
        cfg.num_filters + 2,
    )
    hz = _mel_to_hz(mels)
    hz[-1] -= 0.001
    edges = np.floor((cfg.fft_length + 1) * hz / cfg.sample_rate).astype(np.int64)
    bins = cfg.fft_length // 2 + 1
    bank = np.zeros((cfg.num_filters, bins), dtype=np.float64)
    for i in range(cfg.num_filters):
        left, middle, right = (int(e) for e in edges[i : i + 3])
        for k in range(left, min(right, bins - 1) + 1):
            if left < k < middle:
                bank[i, k] = (k - left) / (middle - left)
            elif middle <= k < right:
                bank[i, k] = (right - k) / (right - middle)
        if not bank[i].any():
            raise ValueError(
                f"mel filter {i} of {cfg.num_filters} covers no FFT bin (edges {left}, {middle}, "
                f"{right}); use fewer filters or a longer FFT than {cfg.fft_length}"
            )
    return bank.astype(np.float32)


_BANK_CACHE: dict[MfeConfig, np.ndarray] = {}


def _cached_bank(cfg: MfeConfig) -> np.ndarray:
    bank = _BANK_CACHE.get(cfg)
    if bank is None:
        bank = _BANK_CACHE[cfg] = mel_filterbank(cfg)
    return bank


def mfe(audio: np.ndarray, cfg: MfeConfig | None = None) -> np.ndarray:
    """Log mel filterbank energies in [0, 1], float32 (frames, filters).

    ``audio`` is float in [-1, 1] with shape (samples,) or (batch, samples); a batch gives
    (batch, frames, filters). One second at 16 kHz gives 99 frames of 40 filters by default.
    """
    cfg = cfg or MfeConfig()
    x = np.asarray(audio, dtype=np.float32)
    if x.ndim not in (1, 2):
        raise ValueError(
            f"mfe expects audio of shape (samples,) or (batch, samples), got {x.shape}"
        )
    n_frames = cfg.num_frames(x.shape[-1])
    if n_frames < 1:
        raise ValueError(
            f"mfe needs at least {cfg.frame_samples} samples for one frame, got {x.shape[-1]}"
        )
    emphasised = x.copy()
    emphasised[..., 1:] -= np.float32(cfg.preemphasis) * x[..., :-1]

    starts = np.arange(n_frames) * cfg.frame_stride_samples
    index = starts[:, None] + np.arange(cfg.frame_samples)[None, :]
    frames = emphasised[..., index]  # (..., frames, frame_samples)
    spectrum = np.fft.rfft(frames, n=cfg.fft_length, axis=-1)
    power = (spectrum.real**2 + spectrum.imag**2).astype(np.float32) / np.float32(cfg.fft_length)
    energies = power @ _cached_bank(cfg).T
    db = np.float32(10.0) * np.log10(np.maximum(energies, np.float32(1e-30)))
    floor = np.float32(cfg.noise_floor_db)
    scaled = (db - floor) / (np.float32(12.0) - floor)
    return np.clip(scaled, 0.0, 1.0).astype(np.float32)


def quantise_features(features: np.ndarray, cfg: MfeConfig | None = None) -> np.ndarray:
    """MFE values in [0, 1] to int8 with scale 1/256 and zero point -128 (see module doc).

    ``cfg`` is accepted so callers pass the same config everywhere; the quantisation is fixed.
    """
    del cfg
    f = np.asarray(features, dtype=np.float32)
    q = np.clip(np.rint(f * np.float32(256.0)), 0, 255).astype(np.int16) + FEATURE_ZERO_POINT
    return q.astype(np.int8)


def dequantise_features(q: np.ndarray) -> np.ndarray:
    """The real values an int8 feature tensor stands for (for the float model and checks)."""
    return (np.asarray(q, dtype=np.float32) - FEATURE_ZERO_POINT) * np.float32(FEATURE_SCALE)


def extract_features(audio: np.ndarray, cfg: MfeConfig | None = None) -> np.ndarray:
    """Audio to the int8 feature tensor the quantised model takes: the whole pre-processing."""
    return quantise_features(mfe(audio, cfg), cfg)
