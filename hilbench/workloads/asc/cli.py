"""`hilbench asc ...`: check, obtain or synthesise the ASC (DCASE 2020) data set."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from hilbench.cli import EXIT_USAGE
from hilbench.cli.lazy import LazyGroup

ZENODO_DOI = "10.5281/zenodo.3819968"
ZENODO_URL = "https://zenodo.org/record/3819968"

FETCH_INSTRUCTIONS = f"""\
The ASC benchmark uses the TAU Urban Acoustic Scenes 2020 Mobile, development dataset
(DCASE 2020 Task 1A), published on Zenodo:

    DOI {ZENODO_DOI}
    {ZENODO_URL}

1. Download TAU-urban-acoustic-scenes-2020-mobile-development.meta.zip and every
   TAU-urban-acoustic-scenes-2020-mobile-development.audio.N.zip from that record
   (about 30 GB of 10 s, 44.1 kHz, 24-bit mono WAV files).
2. Unzip them all into one directory, e.g.
       unzip -q 'TAU-urban-acoustic-scenes-2020-mobile-development.*.zip' -d DATA
   which gives DATA/TAU-urban-acoustic-scenes-2020-mobile-development/ with audio/,
   evaluation_setup/fold1_train.csv, evaluation_setup/fold1_evaluate.csv and meta.csv.
   (The flat layout of the NeuroBench download script, ASC/download_dcase_dataset.py in
   NeuroBench/system_benchmarks -- fold1_*.csv beside raw/*.wav -- is accepted too.)
3. Check it:
       hilbench asc inspect DATA
   The real set gives train 41360 and test 16240 one-second slices (device a; airport,
   street_traffic, bus, park), 14400 of each class over both splits.

The data is licensed by Tampere University for academic research use; read its terms on the
Zenodo page. For tests and demos without the download: hilbench asc make-fixture DIR.
"""


def _fail(ctx: click.Context, message: str) -> None:
    click.echo(f"error: {message}", err=True)
    ctx.exit(EXIT_USAGE)


def _summary(root: Path, decode: bool) -> dict[str, Any]:
    """Scan (and optionally decode) the data set, echo a readable summary, return the counts."""
    from hilbench.workloads.asc.dataset import (
        CLASSES,
        PUBLISHED_CLASS_SLICES,
        PUBLISHED_SLICES,
        compare_with_published,
        iter_clips,
        scan_dataset,
        split_counts,
    )

    index = scan_dataset(root, check_audio=True)
    counts = split_counts(index)
    click.echo(f"data set:   {root} (layout: {index.layout}, audio in {index.audio_dir})")
    click.echo(f"clip rate:  {index.sample_rate} Hz")
    unlisted = sum(not clip.listed for clip in index.test)
    click.echo(f"train:      {len(index.train)} clips = {counts['train']} slices")
    click.echo(f"test:       {len(index.test)} clips = {counts['test']} slices "
               f"({unlisted} clips listed in neither CSV)")
    for scene in CLASSES:
        per = counts["per_class"][scene]
        click.echo(f"  {scene:<15} train {per['train']:>6}  test {per['test']:>6}")
    padded = counts["padded_clips"]
    click.echo(f"short clips: {padded['train']} train, {padded['test']} test "
               "(under 10 s: last slice zero-padded, as NeuroBench's loader does)")
    differences = compare_with_published(counts)
    published = f"{PUBLISHED_SLICES['train']} / {PUBLISHED_SLICES['test']}"
    if differences:
        click.echo(f"published:  DIFFERS from NeuroBench's {published} train / test slices:")
        for line in differences:
            click.echo(f"  {line}")
    else:
        click.echo(f"published:  matches NeuroBench's {published} train / test slices and "
                   f"{PUBLISHED_CLASS_SLICES} per class over both")
    click.echo("  (per-class train / test counts are shown, not checked: NeuroBench publishes "
               "only the totals)")
    if decode:
        for split in ("train", "test"):
            decoded = sum(1 for _ in iter_clips(root, split, index.sample_rate or 16000,
                                                index=index))
            click.echo(f"decoded:    {decoded} {split} clips")
    return {**counts, "sample_rate": index.sample_rate,
            "matches_published": not differences, "differences": differences}


# Sub-commands living in other modules (heavier imports), loaded only when used.
LAZY_COMMANDS: dict[str, str] = {"train": "hilbench.workloads.asc.cli_train:train"}


@click.group(cls=LazyGroup, lazy_commands=LAZY_COMMANDS)
def asc() -> None:
    """The ASC workload: check a data directory, learn how to obtain the data, write a synthetic
    set in the same layout, or train the CPU baseline."""


@asc.command("inspect")
@click.argument("directory", type=click.Path(path_type=Path))
@click.option("--decode", is_flag=True,
              help="Also decode every clip (slow on the real set; headers are always checked).")
@click.pass_context
def inspect_command(ctx: click.Context, directory: Path, decode: bool) -> None:
    """Check DIRECTORY holds the ASC data; the last line is a JSON object of slice counts."""
    from hilbench.workloads.asc.dataset import DatasetError

    try:
        result = _summary(directory, decode)
    except (DatasetError, ImportError) as exc:
        _fail(ctx, str(exc))
        return
    click.echo(json.dumps(result))


@asc.command("fetch-instructions")
def fetch_instructions() -> None:
    """Print how to download and unpack the real data set."""
    click.echo(FETCH_INSTRUCTIONS, nl=False)


@asc.command("make-fixture")
@click.argument("directory", type=click.Path(path_type=Path))
@click.option("--clips", default=4, show_default=True, type=click.IntRange(min=1),
              help="Training clips per scene.")
@click.option("--test-clips", default=1, show_default=True, type=click.IntRange(min=0),
              help="Test clips per scene listed in fold1_evaluate.csv.")
@click.option("--unlisted", default=1, show_default=True, type=click.IntRange(min=0),
              help="Test clips per scene listed in neither CSV.")
@click.option("--seed", default=0, show_default=True, type=int)
@click.option("--layout", default="dcase", show_default=True,
              type=click.Choice(["dcase", "flat"]))
@click.pass_context
def make_fixture_command(ctx: click.Context, directory: Path, clips: int, test_clips: int,
                         unlisted: int, seed: int, layout: str) -> None:
    """Write a small synthetic data set in the real layout to DIRECTORY."""
    from hilbench.workloads.asc.dataset import DatasetError
    from hilbench.workloads.asc.fixture import make_fixture

    if directory.exists() and not directory.is_dir():
        _fail(ctx, f"{directory}: exists and is not a directory")
        return
    try:
        make_fixture(directory, clips_per_class_train=clips, clips_per_class_test=test_clips,
                     extra_unlisted_per_class=unlisted, seed=seed, layout=layout)  # type: ignore[arg-type]
        result = _summary(directory, decode=False)
    except (DatasetError, ImportError, ValueError, OSError) as exc:
        _fail(ctx, str(exc))
        return
    click.echo(json.dumps(result))
