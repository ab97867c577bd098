"""`hilbench xylo …`: train a network for Xylo Audio 2, inspect one, look for an HDK.

These commands need the xylo extra (Rockpool 2.8, numpy < 2): run them with the Xylo
environment's hilbench (`.venv-xylo/bin/hilbench`, see drivers/xylo/README.md).
"""

from __future__ import annotations

import json
import sys
import warnings
from pathlib import Path

import click

from hilbench.agent.driver import DriverError


def _fail(exc: Exception) -> None:
    click.echo(f"error: {exc}", err=True)
    sys.exit(2)


@click.group()
def xylo() -> None:
    """SynSense Xylo Audio 2: train a spiking network that fits the chip, inspect a network
    file, find an HDK. Needs the xylo extra (its own environment, .venv-xylo)."""


@xylo.command("train")
@click.option("--data", "data_root", required=True,
              type=click.Path(exists=True, file_okay=False, path_type=Path),
              help="ASC data set directory (DCASE 2020 layout, or a fixture).")
@click.option("--out", "out_path", required=True, type=click.Path(dir_okay=False, path_type=Path),
              help="Where to write the network file (.npz, format hilbench.xylo.snn).")
@click.option("--hidden", default="63,63,63", show_default=True,
              help="Neurons per hidden layer, comma-separated (Xylo Audio 2: 1000 in all).")
@click.option("--steps", default=300, show_default=True, type=click.IntRange(min=1),
              help="Optimiser steps (batches of up to 32 samples).")
@click.option("--learning-rate", default=1e-2, show_default=True, type=float)
@click.option("--limit-clips", default=None, type=click.IntRange(min=1),
              help="At most this many train clips (ten 1 s samples each), for quick runs.")
@click.option("--seed", default=0, show_default=True, type=int, help="Same seed, same network.")
@click.option("--afe-cache", default=None, type=click.Path(file_okay=False, path_type=Path),
              help="AFE spike cache (default ~/.cache/hilbench/xylo-afe).")
@click.option("--json", "as_json", is_flag=True, help="Print the report as one JSON object.")
def train(data_root: Path, out_path: Path, hidden: str, steps: int, learning_rate: float,
          limit_clips: int | None, seed: int, afe_cache: Path | None, as_json: bool) -> None:
    """Train on the train split and save a mapped, quantised Xylo Audio 2 network.

    The AFE spikes of each sample are simulated once (AFESim, ~1.7 s per sample) and cached;
    the network is mapped with Rockpool's mapper (which refuses what does not fit the chip),
    quantised, and checked in XyloSim. Class = the output channel with the most spikes.
    """
    from hilbench_drivers.xylo.train import train_network

    try:
        sizes = tuple(int(h) for h in hidden.split(","))
    except ValueError:
        raise click.BadParameter(f"{hidden!r} is not a comma-separated list of integers",
                                 param_hint="--hidden") from None

    def progress(stage: str, i: int, n: int) -> None:
        if i == n or i % max(1, n // 10) == 0:
            click.echo(f"{stage}: {i}/{n}", err=True)

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            report = train_network(data_root, out_path, hidden=sizes, steps=steps,
                                   learning_rate=learning_rate, limit=limit_clips, seed=seed,
                                   cache_dir=afe_cache, progress=progress)
    except (DriverError, ValueError) as exc:
        _fail(exc)
    if as_json:
        click.echo(json.dumps(report.to_dict()))
        return
    click.echo(f"wrote {report.out}: hidden {list(report.hidden)}, {report.samples} samples "
               f"({report.afe_cached} AFE cached), {report.steps} steps, loss "
               f"{report.final_loss:.3f}")
    click.echo(f"train accuracy: float {report.train_accuracy_float:.3f}, "
               f"XyloSim (quantised) {report.train_accuracy_xylosim:.3f}")


@xylo.command("inspect")
@click.argument("network", type=click.Path(exists=True, dir_okay=False, path_type=Path))
def inspect(network: Path) -> None:
    """Print a network file's shape, time step, classes, identity and training record."""
    from hilbench_drivers.xylo.network import NetworkFileError, XyloNetwork

    try:
        net = XyloNetwork.load(network)
    except NetworkFileError as exc:
        _fail(exc)
    meta = net.metadata()
    click.echo(json.dumps({k: meta[k] for k in ("shape", "dt", "classes", "sample_rate", "afe",
                                                "sha256", "info")}, indent=2))


@xylo.command("probe")
def probe() -> None:
    """Look for a Xylo Audio 2 HDK through Rockpool/samna; if none, list the USB devices.

    Exit 0 when an HDK was found, 3 when not (the USB listing says what is plugged in)."""
    from hilbench_drivers.xylo.hardware import HardwareXylo, usb_listing

    try:
        device = HardwareXylo.open()
    except DriverError as exc:
        click.echo(f"no HDK: {exc}")
        if exc.code == "missing_sdk":
            click.echo("USB devices:\n  " + "\n  ".join(usb_listing()))
        sys.exit(3)
    click.echo(json.dumps(device.describe()))
    device.close()
