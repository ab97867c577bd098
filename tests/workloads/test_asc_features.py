"""MFE pre-processing: shapes, frequency placement, noise floor, and the int8 boundary."""

from __future__ import annotations

import numpy as np
import pytest

from hilbench.workloads.asc.features import (
    MfeConfig,
    dequantise_features,
    extract_features,
    mel_filterbank,
    mfe,
    quantise_features,
)

SR = 16000


def tone(freq: float, amplitude: float = 0.5, seconds: float = 1.0) -> np.ndarray:
    t = np.arange(int(SR * seconds)) / SR
    return (amplitude * np.sin(2 * np.pi * freq * t)).astype(np.float32)


def test_one_second_gives_99_frames_of_40_filters_in_unit_range() -> None:
    rng = np.random.default_rng(0)
    features = mfe(rng.uniform(-1, 1, SR).astype(np.float32))
    assert features.shape == (99, 40)
    assert features.dtype == np.float32
    assert features.min() >= 0.0 and features.max() <= 1.0


def test_frame_count_follows_length_and_stride() -> None:
    cfg = MfeConfig()
    assert (cfg.frame_samples, cfg.frame_stride_samples) == (320, 160)
    assert mfe(np.zeros(320 + 160 * 5, np.float32), cfg).shape == (6, 40)
    with pytest.raises(ValueError, match="at least 320 samples"):
        mfe(np.zeros(319, np.float32), cfg)


@pytest.mark.parametrize("freq", [250.0, 1000.0, 4000.0])
def test_a_tone_lights_the_mel_filter_that_covers_its_frequency(freq: float) -> None:
    cfg = MfeConfig()
    bank = mel_filterbank(cfg)
    tone_bin = round(freq * cfg.fft_length / SR)
    expected = set(np.nonzero(bank[:, tone_bin])[0])  # the filters that include the tone's bin
    loudest = int(np.argmax(mfe(tone(freq), cfg).mean(axis=0)))
    assert loudest in expected


def test_silence_sits_at_the_noise_floor_and_quantises_to_minus_128() -> None:
    features = mfe(np.zeros(SR, np.float32))
    assert np.all(features == 0.0)
    assert np.all(extract_features(np.zeros(SR, np.float32)) == -128)


def test_louder_audio_gives_larger_features() -> None:
    quiet, loud = mfe(tone(1000.0, 0.01)), mfe(tone(1000.0, 0.5))
    assert loud.mean() > quiet.mean()


def test_a_batch_equals_the_samples_one_by_one() -> None:
    rng = np.random.default_rng(1)
    audio = rng.normal(0, 0.1, (3, SR)).astype(np.float32)
    batch = mfe(audio)
    assert batch.shape == (3, 99, 40)
    for row, sample in zip(batch, audio, strict=True):
        np.testing.assert_allclose(row, mfe(sample), atol=1e-6)


def test_filterbank_has_no_empty_filter_and_rising_centres() -> None:
    bank = mel_filterbank(MfeConfig())
    assert bank.shape == (40, 129)
    assert np.all(bank.max(axis=1) == 1.0)
    centres = bank.argmax(axis=1)
    assert np.all(np.diff(centres) >= 0)
    assert centres[-1] > centres[0]


def test_too_many_filters_for_the_fft_is_refused_with_the_reason() -> None:
    with pytest.raises(ValueError, match="covers no FFT bin"):
        mel_filterbank(MfeConfig(num_filters=120, fft_length=128))


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("fft_length", 300, "power of two"),
        ("num_filters", 1, "at least 2"),
        ("high_frequency_hz", 9000.0, "not inside"),
        ("noise_floor_db", 3.0, "negative"),
    ],
)
def test_invalid_config_is_refused(field: str, value: float, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        MfeConfig(**{field: value})


def test_config_round_trips_through_a_dict_and_rejects_unknown_fields() -> None:
    cfg = MfeConfig(num_filters=32, noise_floor_db=-60.0)
    assert MfeConfig.from_dict(cfg.to_dict()) == cfg
    with pytest.raises(ValueError, match="unknown MfeConfig field"):
        MfeConfig.from_dict({**cfg.to_dict(), "window": "hann"})


def test_quantisation_maps_the_unit_range_onto_int8() -> None:
    values = np.array([0.0, 0.5, 1.0 - 1 / 256, 1.0, 2.0, -1.0], np.float32)
    assert quantise_features(values).tolist() == [-128, 0, 127, 127, 127, -128]
    assert quantise_features(values).dtype == np.int8


def test_dequantised_features_are_within_half_a_step() -> None:
    rng = np.random.default_rng(2)
    values = rng.uniform(0, 255 / 256, 1000).astype(np.float32)
    error = np.abs(dequantise_features(quantise_features(values)) - values)
    assert error.max() <= 1 / 512 + 1e-7
