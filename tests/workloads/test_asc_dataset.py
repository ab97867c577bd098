"""The ASC loader against generated fixtures: split rules, slicing, resampling, refusals."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

sf = pytest.importorskip("soundfile")
pytest.importorskip("scipy")

from hilbench.workloads.asc import (  # noqa: E402
    CLASSES,
    DatasetError,
    iter_slices,
    load_split,
    make_fixture,
    scan_dataset,
    slice_clip,
    split_counts,
)

TRAIN, TEST, UNLISTED = 3, 1, 1  # clips per class in the module fixture


@pytest.fixture(scope="module")
def data_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_fixture(tmp_path_factory.mktemp("asc") / "dcase", clips_per_class_train=TRAIN,
                        clips_per_class_test=TEST, extra_unlisted_per_class=UNLISTED, seed=1)


@pytest.fixture()
def copy_root(data_root: Path, tmp_path: Path) -> Path:
    """A private copy of the fixture that a test may break."""
    return Path(shutil.copytree(data_root, tmp_path / "copy"))


def _csv_rows(path: Path) -> list[list[str]]:
    lines = path.read_text(encoding="utf-8").splitlines()
    return [line.split("\t") for line in lines[1:] if line]


def _write_wav(path: Path, seconds: float, rate: int = 44100, freq: float | None = None) -> None:
    t = np.arange(round(seconds * rate)) / rate
    audio = 0.3 * np.sin(2 * np.pi * (freq or 300.0) * t)
    sf.write(str(path), audio.astype(np.float32), rate, subtype="PCM_24")


# --- split rules ------------------------------------------------------------------------------


@pytest.mark.slow
def test_counts_follow_the_fixture_parameters(data_root: Path) -> None:
    index = scan_dataset(data_root)
    counts = split_counts(index)
    assert index.layout == "dcase"
    assert index.sample_rate == 44100
    assert counts["train"] == 10 * TRAIN * len(CLASSES)
    assert counts["test"] == 10 * (TEST + UNLISTED) * len(CLASSES)
    assert counts["per_class"] == {
        scene: {"train": 10 * TRAIN, "test": 10 * (TEST + UNLISTED)} for scene in CLASSES
    }


def test_train_is_exactly_the_device_a_rows_of_the_four_classes(data_root: Path) -> None:
    rows = _csv_rows(data_root / "evaluation_setup" / "fold1_train.csv")
    expected = {name.split("/")[-1] for name, scene in rows
                if scene in CLASSES and name.endswith("-a.wav")}
    index = scan_dataset(data_root)
    assert {clip.path.name for clip in index.train} == expected
    # the fixture lists other devices and scenes too; they must be what was left out
    assert len(rows) > len(expected)


def test_test_split_adds_device_a_clips_listed_in_neither_csv(data_root: Path) -> None:
    listed = {
        row[0].split("/")[-1]
        for csv_name in ("fold1_train.csv", "fold1_evaluate.csv")
        for row in _csv_rows(data_root / "evaluation_setup" / csv_name)
    }
    index = scan_dataset(data_root)
    unlisted = [clip for clip in index.test if not clip.listed]
    assert len(unlisted) == UNLISTED * len(CLASSES)
    for clip in unlisted:
        assert clip.path.name not in listed
        assert clip.path.name.endswith("-a.wav")
    # the audio directory does hold unlisted files of other devices/scenes; none got in
    strays = [p.name for p in (data_root / "audio").iterdir()
              if p.name not in listed and not p.name.endswith("-a.wav")]
    assert strays
    assert not {clip.path.name for clip in index.test} & set(strays)


def test_labels_match_the_scene_prefix_and_order_is_grouped_by_class(data_root: Path) -> None:
    index = scan_dataset(data_root)
    for clips in (index.train, index.test):
        for clip in clips:
            assert clip.path.name.startswith(CLASSES[clip.label] + "-")
            assert clip.scene == CLASSES[clip.label]
        labels = [clip.label for clip in clips]
        assert labels == sorted(labels)
    # within a class, CSV-listed clips come before the unlisted ones
    for label in range(len(CLASSES)):
        flags = [clip.listed for clip in index.test if clip.label == label]
        assert flags == sorted(flags, reverse=True)


def test_flat_layout_gives_the_same_split(tmp_path: Path) -> None:
    small = {"clips_per_class_train": 1, "clips_per_class_test": 1, "extra_unlisted_per_class": 1,
             "sample_rate": 16000, "seed": 2}
    flat = make_fixture(tmp_path / "flat", layout="flat", **small)
    dcase = make_fixture(tmp_path / "dcase", layout="dcase", **small)
    flat_index, dcase_index = scan_dataset(flat), scan_dataset(dcase)
    assert flat_index.layout == "flat"
    assert flat_index.audio_dir == flat / "raw"
    assert [c.path.name for c in flat_index.test] == [c.path.name for c in dcase_index.test]
    assert split_counts(flat_index) == split_counts(dcase_index)


def test_archive_directory_one_level_down_is_found(data_root: Path, tmp_path: Path) -> None:
    nested = tmp_path / "TAU-urban-acoustic-scenes-2020-mobile-development"
    shutil.copytree(data_root, nested)
    assert split_counts(scan_dataset(tmp_path)) == split_counts(scan_dataset(data_root))


# --- loading, slicing, resampling ----------------------------------------------------------------


def test_slices_at_the_native_rate_are_the_clip_cut_in_ten(data_root: Path) -> None:
    split = load_split(data_root, "train", sample_rate=44100, limit=4)
    first_clip = scan_dataset(data_root).train[0]
    audio, rate = sf.read(str(first_clip.path), dtype="float32")
    assert rate == 44100
    assert split.clip_ids[:10] == [first_clip.clip_id] * 10
    np.testing.assert_array_equal(split.slices[:10], audio.reshape(10, 44100))


def test_load_split_shapes_and_types(data_root: Path) -> None:
    split = load_split(data_root, "test", sample_rate=16000)
    n = 10 * (TEST + UNLISTED) * len(CLASSES)
    assert split.slices.shape == (n, 16000)
    assert split.slices.dtype == np.float32
    assert split.labels.dtype == np.int64
    assert len(split) == n
    assert len(split.clip_ids) == n
    np.testing.assert_array_equal(split.slice_index, np.tile(np.arange(10), n // 10))
    assert np.bincount(split.labels).tolist() == [10 * (TEST + UNLISTED)] * len(CLASSES)


def test_loading_is_deterministic_and_streaming_matches(data_root: Path) -> None:
    first = load_split(data_root, "test", sample_rate=8000, workers=2)
    second = load_split(data_root, "test", sample_rate=8000, workers=1)
    np.testing.assert_array_equal(first.slices, second.slices)
    assert first.clip_ids == second.clip_ids
    streamed = list(iter_slices(data_root, "test", sample_rate=8000))
    assert len(streamed) == len(first)
    np.testing.assert_array_equal(np.stack([s.audio for s in streamed]), first.slices)
    assert [s.label for s in streamed] == first.labels.tolist()
    assert [s.slice_index for s in streamed] == first.slice_index.tolist()


def test_limit_takes_clips_evenly_from_the_classes(data_root: Path) -> None:
    split = load_split(data_root, "train", sample_rate=8000, limit=6)
    assert len(split) == 60
    assert sorted(np.bincount(split.labels, minlength=4).tolist()) == [10, 10, 20, 20]


def test_resampling_keeps_the_pitch(copy_root: Path) -> None:
    target = scan_dataset(copy_root).train[0]
    _write_wav(target.path, 10.0, freq=1000.0)
    split = load_split(copy_root, "train", sample_rate=8000, limit=1)
    spectrum = np.abs(np.fft.rfft(split.slices[3]))
    assert np.argmax(spectrum) == 1000  # 1 s slice: bin k is k Hz


@pytest.mark.parametrize("short_s", [0.005, 0.3])
def test_a_short_clip_is_zero_padded_and_counted(copy_root: Path, short_s: float) -> None:
    target = scan_dataset(copy_root).train[0]
    _write_wav(target.path, 10.0 - short_s)  # NeuroBench's loader pads, it does not refuse
    split = load_split(copy_root, "train", sample_rate=44100, limit=1)
    last = split.slices[9]
    missing = round(short_s * 44100)
    assert np.all(last[-missing:] == 0)
    assert np.any(last[:-missing] != 0)
    index = scan_dataset(copy_root)
    assert index.padded == {"train": [target.path.name], "test": []}
    assert split_counts(index)["padded_clips"] == {"train": 1, "test": 0}


def test_slice_clip_pads_truncates_and_refuses() -> None:
    sr = 100
    short = np.ones(10 * sr - 1, dtype=np.float32)
    sliced = slice_clip(short, sr)
    assert sliced.shape == (10, sr)
    assert sliced[9, -1] == 0 and sliced[9, -2] == 1
    assert slice_clip(np.ones(10 * sr + 1), sr).shape == (10, sr)
    assert slice_clip(np.ones(9 * sr), sr)[9].sum() == 0  # 9 s: padded
    with pytest.raises(DatasetError, match="a TAU 2020 clip is 10 s"):
        slice_clip(np.ones(9 * sr - 1), sr)
    with pytest.raises(DatasetError, match="a TAU 2020 clip is 10 s"):
        slice_clip(np.ones(11 * sr + 1), sr)
    with pytest.raises(ValueError, match="mono"):
        slice_clip(np.ones((10 * sr, 2)), sr)


def test_bad_split_name_is_refused(data_root: Path) -> None:
    with pytest.raises(ValueError, match="'validation'"):
        load_split(data_root, "validation")  # type: ignore[arg-type]


# --- directories that do not match ---------------------------------------------------------------


def test_missing_evaluate_csv_is_named(copy_root: Path) -> None:
    (copy_root / "evaluation_setup" / "fold1_evaluate.csv").unlink()
    with pytest.raises(DatasetError, match=r"fold1_evaluate\.csv: missing") as info:
        scan_dataset(copy_root)
    assert info.value.path == copy_root / "evaluation_setup" / "fold1_evaluate.csv"


def test_empty_directory_points_to_the_instructions(tmp_path: Path) -> None:
    with pytest.raises(DatasetError, match="fetch-instructions"):
        scan_dataset(tmp_path)


def test_wrong_columns_are_named(copy_root: Path) -> None:
    csv_path = copy_root / "evaluation_setup" / "fold1_train.csv"
    lines = csv_path.read_text().splitlines()
    csv_path.write_text("\n".join(["file\tlabel", *lines[1:]]) + "\n")
    with pytest.raises(DatasetError, match=r"fold1_train.csv: header .* lacks column"):
        scan_dataset(copy_root)


def test_comma_separated_csv_is_refused(copy_root: Path) -> None:
    csv_path = copy_root / "evaluation_setup" / "fold1_train.csv"
    csv_path.write_text(csv_path.read_text().replace("\t", ","))
    with pytest.raises(DatasetError, match=r"fold1_train\.csv"):
        scan_dataset(copy_root)


def test_unreadable_wav_is_named(copy_root: Path) -> None:
    target = scan_dataset(copy_root).test[0].path
    target.write_bytes(b"RIFF not really a wave file")
    with pytest.raises(DatasetError, match=rf"{target.name}: unreadable WAV"):
        scan_dataset(copy_root)
    with pytest.raises(DatasetError, match=target.name):
        load_split(copy_root, "test", sample_rate=8000)


def test_wrong_duration_is_named(copy_root: Path) -> None:
    target = scan_dataset(copy_root).train[-1].path
    _write_wav(target, 5.0)
    with pytest.raises(DatasetError, match=rf"{target.name}: .* = 5.000 s; a TAU 2020 clip is 10"):
        scan_dataset(copy_root)


def test_listed_file_missing_from_audio_is_named(copy_root: Path) -> None:
    target = scan_dataset(copy_root).train[0].path
    target.unlink()
    with pytest.raises(DatasetError, match=rf"fold1_train.csv: lists {target.name}, which is not"):
        scan_dataset(copy_root)


def test_label_that_contradicts_the_file_name_is_refused(copy_root: Path) -> None:
    csv_path = copy_root / "evaluation_setup" / "fold1_evaluate.csv"
    text = csv_path.read_text()
    first_airport_row = next(line for line in text.splitlines() if line.startswith("audio/airport"))
    csv_path.write_text(text.replace(first_airport_row,
                                     first_airport_row.replace("\tairport", "\tpark")))
    with pytest.raises(DatasetError, match="is labelled 'park' but its name says 'airport'"):
        scan_dataset(copy_root)


def test_file_in_both_csvs_is_refused(copy_root: Path) -> None:
    setup = copy_root / "evaluation_setup"
    train_row = (setup / "fold1_train.csv").read_text().splitlines()[1]
    with (setup / "fold1_evaluate.csv").open("a") as handle:
        handle.write(train_row + "\n")
    with pytest.raises(DatasetError, match="listed in both"):
        scan_dataset(copy_root)


# --- optional dependencies, real data ------------------------------------------------------------


def test_core_imports_without_soundfile_and_says_what_to_install(data_root: Path) -> None:
    script = (
        "import sys; sys.modules['soundfile'] = None; sys.modules['scipy'] = None\n"
        "from hilbench.workloads.asc import scan_dataset, load_split\n"
        f"index = scan_dataset({str(data_root)!r}, check_audio=False)\n"
        "print(len(index.train))\n"
        "try:\n"
        f"    load_split({str(data_root)!r}, 'train', limit=1)\n"
        "except ImportError as exc:\n"
        "    print(exc)\n"
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                            check=True)
    lines = result.stdout.splitlines()
    assert lines[0] == str(TRAIN * len(CLASSES))
    assert "pip install hilbench[asc]" in lines[1]


REAL_DATA = os.environ.get("HILBENCH_ASC_DATA")


@pytest.mark.slow
@pytest.mark.outside_ci
@pytest.mark.skipif(not REAL_DATA, reason="set HILBENCH_ASC_DATA to the real DCASE 2020 set")
def test_real_data_gives_the_published_split_sizes() -> None:
    counts = split_counts(scan_dataset(REAL_DATA or ""))
    assert counts["train"] == 41360
    assert counts["test"] == 16240
