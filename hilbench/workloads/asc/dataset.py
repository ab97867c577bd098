"""The ASC benchmark data: DCASE 2020 TAU Urban Acoustic Scenes 2020 Mobile (development set),
device ``a``, four scenes, every 10 s clip cut into ten 1 s slices.

The split follows the NeuroBench reference loader (``ASC/dcase_audio_scene_classification.py``
in NeuroBench/system_benchmarks), because that is what the published 41 360 / 16 240 slice
counts come from:

* train = device-``a`` clips of the four scenes listed in ``fold1_train.csv``;
* test  = those listed in ``fold1_evaluate.csv`` **plus** every device-``a`` clip of the four
  scenes listed in neither file, labelled by the scene prefix of its file name.

Unlike the reference (which iterates a Python ``set``) the order is deterministic: grouped by
class in :data:`CLASSES` order; within a class the CSV-listed clips in CSV row order, then the
unlisted clips sorted by file name.

Two directory layouts are recognised:

``"dcase"``  the archives as they unpack: ``ROOT/evaluation_setup/fold1_*.csv`` and
             ``ROOT/audio/*.wav``;
``"flat"``   what the NeuroBench download script produces: ``ROOT/fold1_*.csv`` beside
             ``ROOT/raw/*.wav`` (or ``ROOT/audio/*.wav``, or the WAVs in ROOT itself).

Audio I/O needs the optional ``soundfile`` and ``scipy`` packages (``pip install
hilbench[asc]``); they are imported only when audio is actually read, so this module imports
with numpy alone.
"""

from __future__ import annotations

import csv
import math
import os
import re
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, NamedTuple

import numpy as np

CLASSES: tuple[str, ...] = ("airport", "street_traffic", "bus", "park")
DEVICE = "a"
CLIP_SECONDS = 10
SLICES_PER_CLIP = 10
# Real clips are 10 s. Like NeuroBench's loader, a shorter clip has its last slice zero-padded
# (and is counted), a longer one loses the excess; only what is clearly not this data set is
# refused: under MIN_CLIP_S, or over MAX_CLIP_S.
MIN_CLIP_S = 9.0
MAX_CLIP_S = 11.0
# The slice counts NeuroBench publishes for this split: ASC.md of NeuroBench/system_benchmarks
# ("train/val/test split is 41360/1320/16240"), asserted by its loader
# (ASC/dcase_audio_scene_classification.py: train 41360, test 16240; its "val" 1320 are the
# fold1_evaluate.csv clips, which the loader's test split includes).
PUBLISHED_SLICES = {"train": 41_360, "test": 16_240}
# Per class, only the sum of both splits is known: device a recorded 1440 clips (4 h) of each of
# the ten scenes (TAU Urban Acoustic Scenes 2020 Mobile, development: device a 40 h = 14 400
# clips, balanced per scene), and the loader's test split is every device-a clip not in
# fold1_train.csv, so each class has 1440 clips = 14 400 slices in train + test. Consistent with
# the published totals: (41 360 + 16 240) / 4 = 14 400. How each class divides between train and
# test depends on fold1_train.csv, which NeuroBench does not publish per class: `asc inspect`
# shows those counts and checks none.
CLIPS_PER_CLASS_DEVICE_A = 1440
PUBLISHED_CLASS_SLICES = CLIPS_PER_CLASS_DEVICE_A * SLICES_PER_CLIP  # train + test, per class

TRAIN_CSV = "fold1_train.csv"
EVALUATE_CSV = "fold1_evaluate.csv"
REQUIRED_COLUMNS = ("filename", "scene_label")
# The name the development archives unpack into; accepted one level below the given root.
ARCHIVE_DIR_NAME = "TAU-urban-acoustic-scenes-2020-mobile-development"

Split = Literal["train", "test"]
Layout = Literal["dcase", "flat"]

# scene-city-location-segment-device.wav, e.g. airport-lisbon-1000-40000-a.wav
_CLIP_NAME = re.compile(
    r"^(?P<scene>[a-z_]+)-(?P<city>[a-z]+)-(?P<location>\d+)-(?P<segment>\d+)-(?P<device>[a-z0-9]+)"
    r"\.wav$"
)


class DatasetError(ValueError):
    """The directory is not a usable ASC data set; ``path`` names the offending file."""

    def __init__(self, message: str, path: Path | str | None = None) -> None:
        super().__init__(message)
        self.path = Path(path) if path is not None else None


@dataclass(frozen=True)
class AscClip:
    """One 10 s device-``a`` recording of one of the four scenes, and the split it belongs to."""

    path: Path
    label: int  # index into CLASSES
    split: Split
    listed: bool = True  # False: in neither CSV, added to test like the reference does

    @property
    def scene(self) -> str:
        return CLASSES[self.label]

    @property
    def clip_id(self) -> str:
        return self.path.stem


@dataclass
class DatasetIndex:
    """The clips of both splits, found and checked without decoding any audio."""

    root: Path
    layout: Layout
    audio_dir: Path
    train: list[AscClip] = field(default_factory=list)
    test: list[AscClip] = field(default_factory=list)
    sample_rate: int | None = None  # native rate of the WAVs; None when headers were not read
    # Clips shorter than 10 s (zero-padded when sliced), by split; filled when headers are read.
    padded: dict[str, list[str]] = field(default_factory=lambda: {"train": [], "test": []})

    def clips(self, split: Split) -> list[AscClip]:
        if split == "train":
            return self.train
        if split == "test":
            return self.test
        raise ValueError(f"unknown split {split!r}; expected 'train' or 'test'")


@dataclass
class AscSplit:
    """A split loaded into memory: one row per 1 s slice."""

    split: Split
    sample_rate: int
    slices: np.ndarray  # float32 (N, sample_rate)
    labels: np.ndarray  # int64 (N,)
    clip_ids: list[str]  # (N,) the clip each slice was cut from
    slice_index: np.ndarray  # int64 (N,) position 0..9 of the slice within its clip

    def __len__(self) -> int:
        return int(self.labels.shape[0])


class AscSlice(NamedTuple):
    """One 1 s slice as streamed by :func:`iter_slices`."""

    audio: np.ndarray  # float32 (sample_rate,)
    label: int
    clip_id: str
    slice_index: int


# ---------------------------------------------------------------------------------------------
# Finding the files


def _locate(root: Path) -> tuple[Layout, Path, Path]:
    """Return (layout, directory holding the CSVs, directory holding the WAVs)."""
    if not root.is_dir():
        raise DatasetError(f"{root}: not a directory", root)
    nested = root / ARCHIVE_DIR_NAME
    if not (root / "evaluation_setup").is_dir() and (nested / "evaluation_setup").is_dir():
        root = nested
    if (root / "evaluation_setup").is_dir():
        audio_dir = root / "audio"
        if not audio_dir.is_dir():
            raise DatasetError(
                f"{audio_dir}: missing; the DCASE layout keeps the WAV files in ROOT/audio/",
                audio_dir,
            )
        return "dcase", root / "evaluation_setup", audio_dir
    if (root / TRAIN_CSV).is_file() or (root / EVALUATE_CSV).is_file():
        for candidate in (root / "raw", root / "audio"):
            if candidate.is_dir():
                return "flat", root, candidate
        return "flat", root, root
    raise DatasetError(
        f"{root}: no {TRAIN_CSV} found, neither in {root / 'evaluation_setup'} (DCASE layout) "
        f"nor in {root} (flat layout of the NeuroBench download script). "
        "Run `hilbench asc fetch-instructions` to see how to obtain the data.",
        root / "evaluation_setup" / TRAIN_CSV,
    )


def _read_metadata(csv_path: Path) -> list[tuple[str, str]]:
    """(file name without folder, scene label) for every row of a tab-separated fold file."""
    if not csv_path.is_file():
        raise DatasetError(f"{csv_path}: missing (needed for the train/test split)", csv_path)
    try:
        with csv_path.open(newline="", encoding="utf-8") as handle:
            rows = list(csv.reader(handle, delimiter="\t"))
    except (OSError, UnicodeDecodeError) as exc:
        raise DatasetError(f"{csv_path}: cannot be read: {exc}", csv_path) from exc
    if not rows:
        raise DatasetError(f"{csv_path}: empty; expected a header 'filename<TAB>scene_label'",
                           csv_path)
    header = [name.strip() for name in rows[0]]
    missing = [name for name in REQUIRED_COLUMNS if name not in header]
    if missing:
        raise DatasetError(
            f"{csv_path}: header {header!r} lacks column(s) {missing}; expected tab-separated "
            "columns 'filename' and 'scene_label'",
            csv_path,
        )
    name_col, label_col = header.index("filename"), header.index("scene_label")
    entries: list[tuple[str, str]] = []
    for line_no, row in enumerate(rows[1:], start=2):
        if not row or all(not cell.strip() for cell in row):
            continue
        if len(row) != len(header):
            raise DatasetError(
                f"{csv_path}, line {line_no}: {len(row)} field(s), the header has "
                f"{len(header)} (is the file tab-separated?)",
                csv_path,
            )
        entries.append((row[name_col].strip().split("/")[-1], row[label_col].strip()))
    return entries


def _parse_clip_name(name: str) -> tuple[str, str] | None:
    """(scene, device) from a TAU file name, or None for a name that does not follow it."""
    match = _CLIP_NAME.match(name)
    return (match["scene"], match["device"]) if match else None


def _select_listed(
    csv_path: Path, entries: list[tuple[str, str]], split: Split, present: set[str], audio_dir: Path
) -> list[AscClip]:
    """The device-``a`` rows of the four scenes, grouped by class, in CSV order."""
    by_class: list[list[AscClip]] = [[] for _ in CLASSES]
    seen: set[str] = set()
    for name, scene_label in entries:
        parsed = _parse_clip_name(name)
        if parsed is None:
            continue
        scene, device = parsed
        if device != DEVICE or scene not in CLASSES:
            continue
        if scene_label != scene:
            raise DatasetError(
                f"{csv_path}: {name} is labelled {scene_label!r} but its name says {scene!r}",
                csv_path,
            )
        if name in seen:
            raise DatasetError(f"{csv_path}: {name} is listed twice", csv_path)
        seen.add(name)
        if name not in present:
            raise DatasetError(
                f"{csv_path}: lists {name}, which is not in {audio_dir} (incomplete download?)",
                audio_dir / name,
            )
        label = CLASSES.index(scene)
        by_class[label].append(AscClip(audio_dir / name, label, split))
    return [clip for group in by_class for clip in group]


def _check_header(clip: AscClip) -> tuple[int, bool]:
    """Read the WAV header; refuse unreadable files and clearly wrong durations.
    Returns the rate and whether the clip is short (its last slice will be zero-padded)."""
    sf = require_soundfile()
    try:
        info = sf.info(str(clip.path))
    except Exception as exc:  # soundfile raises its own LibsndfileError / RuntimeError
        raise DatasetError(f"{clip.path}: unreadable WAV file: {exc}", clip.path) from exc
    _check_duration(clip.path, info.frames, info.samplerate)
    return int(info.samplerate), info.frames < CLIP_SECONDS * info.samplerate


def _check_duration(path: Path | str, frames: int, sample_rate: int) -> None:
    seconds = frames / sample_rate
    if not MIN_CLIP_S <= seconds <= MAX_CLIP_S:
        raise DatasetError(
            f"{path}: {frames} samples at {sample_rate} Hz = {seconds:.3f} s; a TAU 2020 clip "
            f"is {CLIP_SECONDS} s (shorter ones down to {MIN_CLIP_S:g} s are zero-padded)",
            path,
        )


def scan_dataset(root: str | os.PathLike[str], check_audio: bool = True) -> DatasetIndex:
    """Find the train and test clips under ``root`` and check that the directory matches.

    With ``check_audio`` every selected WAV's header is read (fast: no decoding) so that an
    unreadable file or a wrong duration is reported now, naming the file, rather than halfway
    through a run. Raises :class:`DatasetError`.
    """
    layout, meta_dir, audio_dir = _locate(Path(root))
    train_entries = _read_metadata(meta_dir / TRAIN_CSV)
    test_entries = _read_metadata(meta_dir / EVALUATE_CSV)
    present = {entry.name for entry in audio_dir.iterdir() if entry.name.endswith(".wav")}

    train = _select_listed(meta_dir / TRAIN_CSV, train_entries, "train", present, audio_dir)
    test = _select_listed(meta_dir / EVALUATE_CSV, test_entries, "test", present, audio_dir)
    overlap = {c.path.name for c in train} & {c.path.name for c in test}
    if overlap:
        first = sorted(overlap)[0]
        raise DatasetError(
            f"{first} is listed in both {TRAIN_CSV} and {EVALUATE_CSV} "
            f"({len(overlap)} file(s) overlap)",
            meta_dir / EVALUATE_CSV,
        )

    listed = {name for name, _ in train_entries} | {name for name, _ in test_entries}
    unlisted_by_class: list[list[AscClip]] = [[] for _ in CLASSES]
    for name in sorted(present - listed):
        parsed = _parse_clip_name(name)
        if parsed is None or parsed[1] != DEVICE or parsed[0] not in CLASSES:
            continue
        label = CLASSES.index(parsed[0])
        unlisted_by_class[label].append(AscClip(audio_dir / name, label, "test", listed=False))
    listed_by_class: list[list[AscClip]] = [[] for _ in CLASSES]
    for clip in test:
        listed_by_class[clip.label].append(clip)
    # per class: the evaluate-CSV clips in CSV order, then the unlisted ones by name
    test = [
        clip
        for listed_clips, extra_clips in zip(listed_by_class, unlisted_by_class, strict=True)
        for clip in (*listed_clips, *extra_clips)
    ]

    if not train:
        raise DatasetError(
            f"{meta_dir / TRAIN_CSV}: lists no device-'{DEVICE}' clip of {', '.join(CLASSES)}",
            meta_dir / TRAIN_CSV,
        )
    index = DatasetIndex(root=Path(root), layout=layout, audio_dir=audio_dir,
                         train=train, test=test)
    if check_audio:
        rates: dict[int, Path] = {}
        for clip in train + test:
            rate, short = _check_header(clip)
            rates.setdefault(rate, clip.path)
            if short:
                index.padded[clip.split].append(clip.path.name)
        if len(rates) > 1:
            detail = ", ".join(f"{rate} Hz ({path.name})" for rate, path in sorted(rates.items()))
            raise DatasetError(f"{audio_dir}: clips have different sample rates: {detail}",
                               audio_dir)
        index.sample_rate = next(iter(rates)) if rates else None
    return index


def split_counts(index: DatasetIndex) -> dict[str, Any]:
    """Slice counts per split and per class, the figures the benchmark rules quote."""
    per_class = {
        scene: {
            "train": SLICES_PER_CLIP * sum(c.label == label for c in index.train),
            "test": SLICES_PER_CLIP * sum(c.label == label for c in index.test),
        }
        for label, scene in enumerate(CLASSES)
    }
    return {
        "train": SLICES_PER_CLIP * len(index.train),
        "test": SLICES_PER_CLIP * len(index.test),
        "per_class": per_class,
        "padded_clips": {split: len(names) for split, names in index.padded.items()},
    }


def compare_with_published(counts: dict[str, Any]) -> list[str]:
    """Where the slice counts differ from what is known of NeuroBench's split: 41 360 / 16 240 in
    total and 14 400 per class over both splits (see PUBLISHED_CLASS_SLICES for the source);
    [] = match. Per-class counts of each split are not published, so they are not compared."""
    differences = []
    for split, published in PUBLISHED_SLICES.items():
        if counts[split] != published:
            differences.append(f"{split}: {counts[split]} slices, published {published} "
                               f"({counts[split] - published:+d})")
    for scene in CLASSES:
        got = counts["per_class"][scene]["train"] + counts["per_class"][scene]["test"]
        if got != PUBLISHED_CLASS_SLICES:
            differences.append(
                f"{scene}: {got} slices in train + test, device a holds "
                f"{PUBLISHED_CLASS_SLICES} ({got - PUBLISHED_CLASS_SLICES:+d})"
            )
    return differences


# ---------------------------------------------------------------------------------------------
# Reading audio


def require_soundfile() -> Any:
    """The soundfile module, imported on first use so the core does not depend on it."""
    try:
        import soundfile
    except ImportError as exc:  # pragma: no cover - depends on the installation
        raise ImportError(
            "reading ASC audio needs the 'soundfile' package: pip install hilbench[asc]"
        ) from exc
    return soundfile


def _resample(audio: np.ndarray, from_rate: int, to_rate: int) -> np.ndarray:
    if from_rate == to_rate:
        return audio
    try:
        from scipy.signal import resample_poly
    except ImportError as exc:  # pragma: no cover - depends on the installation
        raise ImportError(
            "resampling ASC audio needs the 'scipy' package: pip install hilbench[asc]"
        ) from exc
    divisor = math.gcd(from_rate, to_rate)
    return resample_poly(audio, to_rate // divisor, from_rate // divisor).astype(np.float32)


def _to_slices(audio: np.ndarray, sample_rate: int) -> np.ndarray:
    """Exactly ten rows of ``sample_rate`` samples: zero-pad the end, drop any excess."""
    total = SLICES_PER_CLIP * sample_rate
    fixed = np.zeros(total, dtype=np.float32)
    count = min(total, audio.shape[0])
    fixed[:count] = audio[:count]
    return fixed.reshape(SLICES_PER_CLIP, sample_rate)


def slice_clip(audio: np.ndarray, sr: int) -> np.ndarray:
    """Cut a mono 10 s clip sampled at ``sr`` into ten 1 s slices, shape (10, sr), float32.

    A short clip (down to :data:`MIN_CLIP_S`) has its last slice zero-padded, as NeuroBench's
    loader does; a long one loses the excess. Raises :class:`DatasetError` for other lengths,
    because silently padding a 5 s clip would pass silence off as a scene.
    """
    samples = np.asarray(audio)
    if samples.ndim != 1:
        raise ValueError(f"slice_clip expects mono audio (1-D), got shape {samples.shape}")
    _check_duration("<audio>", samples.shape[0], sr)
    return _to_slices(samples.astype(np.float32, copy=False), sr)


def read_clip(path: str | os.PathLike[str], sample_rate: int = 16000) -> np.ndarray:
    """Decode one clip, mix it to mono, check its duration, resample and slice: (10, rate)."""
    sf = require_soundfile()
    try:
        audio, native_rate = sf.read(str(path), dtype="float32", always_2d=True)
    except Exception as exc:  # soundfile raises its own LibsndfileError / RuntimeError
        raise DatasetError(f"{path}: unreadable WAV file: {exc}", path) from exc
    _check_duration(path, audio.shape[0], native_rate)
    mono = audio.mean(axis=1) if audio.shape[1] > 1 else audio[:, 0]
    return _to_slices(_resample(mono, int(native_rate), sample_rate), sample_rate)


def _limited(clips: Sequence[AscClip], limit: int | None) -> list[AscClip]:
    """At most ``limit`` clips, taken in turn from each class so a small subset stays balanced;
    the result keeps the split's order."""
    if limit is None or limit >= len(clips):
        return list(clips)
    if limit < 0:
        raise ValueError(f"limit must be >= 0, got {limit}")
    positions: list[list[int]] = [[] for _ in CLASSES]
    for position, clip in enumerate(clips):
        positions[clip.label].append(position)
    chosen: list[int] = []
    round_no = 0
    while len(chosen) < limit:
        for group in positions:
            if round_no < len(group) and len(chosen) < limit:
                chosen.append(group[round_no])
        round_no += 1
    return [clips[position] for position in sorted(chosen)]


def _check_args(split: str, sample_rate: int) -> None:
    if split not in ("train", "test"):
        raise ValueError(f"unknown split {split!r}; expected 'train' or 'test'")
    if sample_rate <= 0:
        raise ValueError(f"sample_rate must be a positive number of Hz, got {sample_rate}")


def iter_clips(
    root: str | os.PathLike[str],
    split: Split,
    sample_rate: int = 16000,
    limit: int | None = None,
    index: DatasetIndex | None = None,
) -> Iterator[tuple[AscClip, np.ndarray]]:
    """Yield (clip, its (10, sample_rate) slices) one clip at a time, in the split's order."""
    _check_args(split, sample_rate)
    index = index or scan_dataset(root, check_audio=False)
    for clip in _limited(index.clips(split), limit):
        yield clip, read_clip(clip.path, sample_rate)


def iter_slices(
    root: str | os.PathLike[str],
    split: Split,
    sample_rate: int = 16000,
    limit: int | None = None,
    index: DatasetIndex | None = None,
) -> Iterator[AscSlice]:
    """Stream the split slice by slice, holding one clip in memory (the test split is ~1 GB
    at 16 kHz when loaded whole). ``limit`` counts clips, as in :func:`load_split`."""
    for clip, slices in iter_clips(root, split, sample_rate, limit, index):
        for position in range(SLICES_PER_CLIP):
            yield AscSlice(slices[position], clip.label, clip.clip_id, position)


def load_split(
    root: str | os.PathLike[str],
    split: Split,
    sample_rate: int = 16000,
    limit: int | None = None,
    workers: int | None = None,
    index: DatasetIndex | None = None,
) -> AscSplit:
    """Load a whole split into memory, decoding clips on ``workers`` threads.

    ``limit`` keeps at most that many *clips* (ten slices each), taken evenly from the four
    classes, for quick runs; ``None`` loads everything.
    """
    _check_args(split, sample_rate)
    index = index or scan_dataset(root, check_audio=False)
    clips = _limited(index.clips(split), limit)
    count = SLICES_PER_CLIP * len(clips)
    slices = np.empty((count, sample_rate), dtype=np.float32)
    workers = workers or min(4, os.cpu_count() or 1)

    def decode(clip: AscClip) -> np.ndarray:
        return read_clip(clip.path, sample_rate)

    pool = ThreadPoolExecutor(max_workers=max(1, workers))
    try:
        for position, clip_slices in enumerate(pool.map(decode, clips)):
            start = position * SLICES_PER_CLIP
            slices[start:start + SLICES_PER_CLIP] = clip_slices
    finally:
        # on an error, do not decode the rest of a 40 000-slice split before reporting it
        pool.shutdown(wait=True, cancel_futures=True)

    return AscSplit(
        split=split,
        sample_rate=sample_rate,
        slices=slices,
        labels=np.repeat(np.array([c.label for c in clips], dtype=np.int64), SLICES_PER_CLIP),
        clip_ids=[c.clip_id for c in clips for _ in range(SLICES_PER_CLIP)],
        slice_index=np.tile(np.arange(SLICES_PER_CLIP, dtype=np.int64), len(clips)),
    )
