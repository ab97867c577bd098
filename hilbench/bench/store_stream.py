"""`hilbench bench store-stream`: memory while streaming an hour of 1 kHz samples into the store.

Samples arrive as one ``Samples`` document per second of readings (what the orchestrator emits
when it drains an instrument), go through the real StoreWriter into a real SQLite file, and are
read back batch by batch. Resident memory is sampled as it goes; a flat line means the write
path keeps nothing per sample.
"""

from __future__ import annotations

import resource
import tempfile
import time
from pathlib import Path

import click
import numpy as np
import psutil

from hilbench import __version__
from hilbench.documents import PhaseStart, PhaseStop, RunStart, RunStop, Samples, new_uid
from hilbench.store import Store, StoreWriter


def _rss_mib() -> float:
    return psutil.Process().memory_info().rss / 2**20


def _peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB


@click.command()
@click.option("--seconds", default=3600, show_default=True, help="Simulated acquisition length.")
@click.option("--rate", default=1000, show_default=True, help="Samples per second.")
@click.option("--db", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Store file [default: a temporary file, deleted afterwards].")
def store_stream(seconds: int, rate: int, db: Path | None) -> None:
    """Stream SECONDS × RATE power samples into a store; print resident memory as it grows."""
    with tempfile.TemporaryDirectory() as tmp:
        path = db or Path(tmp) / "stream.sqlite"
        rng = np.random.default_rng(0)
        run, phase = new_uid(), new_uid()
        writer = StoreWriter(path)
        t_wall = time.perf_counter()
        writer(RunStart(run, new_uid(), "bench/store-stream", "bench.store_stream",
                        {"seconds": seconds, "rate": rate}, {}, 0.0, time.time(), __version__))
        writer(PhaseStart(phase, run, "active", 0.0, {}))
        baseline = _rss_mib()
        click.echo(f"streaming {seconds} s at {rate} Hz = {seconds * rate:,} samples into {path}")
        click.echo(f"RSS at start {baseline:.1f} MiB")
        report_every = max(1, seconds // 6)
        dt = 1.0 / rate
        for second in range(seconds):
            t = second + np.arange(rate) * dt
            watts = 0.1 + 0.001 * rng.standard_normal(rate)
            writer(Samples(run, phase, "dmm", "W", t, watts))
            if (second + 1) % report_every == 0:
                click.echo(f"  {second + 1:>6} s streamed   RSS {_rss_mib():7.1f} MiB")
        writer(PhaseStop(phase, run, float(seconds), "success"))
        writer(RunStop(run, float(seconds), "success"))
        writer.close()
        write_s = time.perf_counter() - t_wall
        after_write = _rss_mib()
        total = 0
        with Store(path) as store:
            for batch in store.sample_batches(run, "dmm"):
                total += len(batch["t"])
        size_mib = path.stat().st_size / 2**20
        click.echo(f"read back {total:,} samples batch by batch; file {size_mib:.1f} MiB")
        click.echo(f"write {seconds * rate / write_s:,.0f} samples/s")
        click.echo(f"RSS after write {after_write:.1f} MiB, after read {_rss_mib():.1f} MiB")
        click.echo(f"peak RSS {_peak_rss_mib():.1f} MiB (growth over start "
                   f"{_peak_rss_mib() - baseline:.1f} MiB)")
