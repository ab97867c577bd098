"""The synthetic ASC fixture: the real layout and format, reproducible, and learnable."""

from __future__ import annotations

from itertools import pairwise
from pathlib import Path

import numpy as np
import pytest

sf = pytest.importorskip("soundfile")
pytest.importorskip("scipy")

from hilbench.workloads.asc import CLASSES, load_split, make_fixture  # noqa: E402


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_fixture(tmp_path_factory.mktemp("fixture") / "data", seed=7)


@pytest.mark.slow
def test_dcase_layout_and_csv_headers(root: Path) -> None:
    setup = root / "evaluation_setup"
    for name in ("fold1_train.csv", "fold1_evaluate.csv"):
        lines = (setup / name).read_text(encoding="utf-8").splitlines()
        assert lines[0] == "filename\tscene_label"
        assert all(line.startswith("audio/") and line.count("\t") == 1 for line in lines[1:])
    assert (setup / "fold1_test.csv").read_text().splitlines()[0] == "filename"
    meta_header = (root / "meta.csv").read_text().splitlines()[0]
    assert meta_header == "filename\tscene_label\tidentifier\tsource_label"
    listed = [line.split("\t")[0] for line in (setup / "fold1_train.csv").read_text().splitlines()]
    for entry in listed[1:]:
        assert (root / entry).is_file()


def test_wavs_are_ten_second_24_bit_mono_like_the_original(root: Path) -> None:
    wavs = sorted((root / "audio").glob("*.wav"))
    assert wavs
    for path in wavs:
        info = sf.info(str(path))
        assert (info.samplerate, info.channels, info.frames) == (44100, 1, 441000), path.name
        assert info.subtype == "PCM_24", path.name


def test_files_the_loader_must_ignore_are_present(root: Path) -> None:
    names = [p.name for p in (root / "audio").glob("*.wav")]
    assert any(not name.endswith("-a.wav") for name in names)  # other devices
    assert any(name.split("-")[0] not in CLASSES for name in names)  # other scenes


@pytest.mark.slow
def test_same_seed_same_bytes_other_seed_other_audio(tmp_path: Path) -> None:
    small = {"clips_per_class_train": 1, "clips_per_class_test": 1, "extra_unlisted_per_class": 0,
             "sample_rate": 16000}
    first = make_fixture(tmp_path / "first", seed=5, **small)
    again = make_fixture(tmp_path / "again", seed=5, **small)
    other = make_fixture(tmp_path / "other", seed=6, **small)
    wavs = sorted((first / "audio").glob("*.wav"))
    for path in wavs:
        assert (again / "audio" / path.name).read_bytes() == path.read_bytes(), path.name
    for name in ("evaluation_setup/fold1_train.csv", "meta.csv"):
        assert (again / name).read_bytes() == (first / name).read_bytes()
    clip = next(p.name for p in wavs if p.name.endswith("-a.wav"))
    assert (other / "audio" / clip).read_bytes() != (first / "audio" / clip).read_bytes()


def test_flat_layout_and_other_rate(tmp_path: Path) -> None:
    flat = make_fixture(tmp_path / "flat", clips_per_class_train=1, clips_per_class_test=0,
                        extra_unlisted_per_class=0, sample_rate=16000, layout="flat")
    assert (flat / "fold1_train.csv").is_file()
    assert (flat / "fold1_evaluate.csv").is_file()
    wav = next((flat / "raw").glob("*-a.wav"))
    assert sf.info(str(wav)).samplerate == 16000


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"clips_per_class_train": 0}, "clips_per_class_train"),
        ({"extra_unlisted_per_class": -1}, ">= 0"),
        ({"sample_rate": 4000}, "sample_rate"),
        ({"layout": "zip"}, "layout"),
    ],
)
def test_bad_arguments_are_refused(tmp_path: Path, kwargs: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        make_fixture(tmp_path / "bad", **kwargs)


def _band_energies(slices: np.ndarray, rate: int) -> np.ndarray:
    power = np.abs(np.fft.rfft(slices, axis=1)) ** 2
    freqs = np.fft.rfftfreq(slices.shape[1], 1 / rate)
    edges = np.geomspace(20, rate / 2, 17)
    bands = [power[:, (freqs >= lo) & (freqs < hi)].mean(axis=1)
             for lo, hi in pairwise(edges)]
    return np.log(np.stack(bands, axis=1) + 1e-12)


def test_classes_are_learnable_from_their_spectra(root: Path) -> None:
    """A nearest-centroid classifier on band energies, trained on train, beats chance on test by
    far: the spectra depend on the class, so a real model has something to learn."""
    rate = 8000
    train = load_split(root, "train", sample_rate=rate)
    test = load_split(root, "test", sample_rate=rate)
    features_train = _band_energies(train.slices, rate)
    mean, std = features_train.mean(axis=0), features_train.std(axis=0) + 1e-6
    features_train = (features_train - mean) / std
    features_test = (_band_energies(test.slices, rate) - mean) / std
    centroids = np.stack([features_train[train.labels == k].mean(axis=0)
                          for k in range(len(CLASSES))])
    distances = ((features_test[:, None, :] - centroids[None]) ** 2).sum(axis=-1)
    accuracy = float(np.mean(distances.argmin(axis=1) == test.labels))
    assert accuracy > 0.7  # chance is 0.25
