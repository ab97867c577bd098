"""`hilbench asc train`: train the CPU baseline CNN and write its int8 model file."""

from __future__ import annotations

import json
from pathlib import Path

import click


@click.command("train")
@click.option(
    "--data",
    "data_root",
    required=True,
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    help="ASC data set directory (real DCASE layout or a fixture from `make_fixture`).",
)
@click.option(
    "--out",
    "out_path",
    required=True,
    type=click.Path(dir_okay=False, path_type=Path),
    help="Where to write the int8 model (.npz).",
)
@click.option(
    "--epochs", default=30, show_default=True, type=click.IntRange(min=1), help="Passes over train."
)
@click.option("--seed", default=0, show_default=True, type=int, help="Same seed, same weights.")
@click.option(
    "--limit-clips",
    default=None,
    type=click.IntRange(min=1),
    help="Use at most this many clips per split (balanced over classes), for quick runs.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the report as one JSON object.")
def train(
    data_root: Path,
    out_path: Path,
    epochs: int,
    seed: int,
    limit_clips: int | None,
    as_json: bool,
) -> None:
    """Train on the train split, quantise to int8, save, and report test accuracy."""
    from hilbench.workloads.asc.dataset import DatasetError

    try:
        from hilbench.workloads.asc.train import train_model

        report = train_model(data_root, out_path, epochs=epochs, seed=seed, limit_clips=limit_clips)
    except DatasetError as exc:
        raise click.BadParameter(str(exc), param_hint="--data") from exc
    except ImportError as exc:
        raise click.ClickException(str(exc)) from exc
    if as_json:
        click.echo(json.dumps(report.to_dict(), sort_keys=True))
        return

    def pct(value: float | None) -> str:
        return "n/a (no test split)" if value is None else f"{100 * value:.2f} %"

    click.echo(f"model           {report.model_path} ({report.weight_bytes} bytes of weights)")
    click.echo(f"slices          train {report.train_slices}, test {report.test_slices}")
    click.echo(f"train accuracy  {pct(report.train_accuracy_float)} (float)")
    click.echo(f"test accuracy   {pct(report.test_accuracy_float)} (float)")
    click.echo(f"int8 agreement  {pct(report.int8_float_agreement)} of test slices")
    click.echo(f"test accuracy   {pct(report.test_accuracy_int8)} (int8)")
