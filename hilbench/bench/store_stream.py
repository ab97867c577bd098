"""`hilbench bench store-stream`: memory and size on disk while streaming an hour of samples
into the store (issue 35: 1 MS/s for 1 h with flat memory and near raw float32 size).

Samples arrive as one ``Samples`` document per second of readings (what the orchestrator emits
when it drains an instrument), as float32 values on ``t0 + k·dt`` stamps (what a JS220-class
stream delivers), go through the real StoreWriter into a real SQLite file, and are read back
batch by batch. Resident memory is sampled as it goes; a flat line means the write path keeps
nothing per sample. The file's size is set against the raw float32 size of the values
(4 bytes a sample): stamps on a line cost ~0 (:mod:`hilbench.store.sample_blobs`).
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
        baseline = first_batch = _rss_mib()
        click.echo(f"streaming {seconds} s at {rate} Hz = {seconds * rate:,} samples into {path}")
        click.echo(f"RSS at start {baseline:.1f} MiB")
        report_every = max(1, seconds // 6)
        dt = 1.0 / rate
        for second in range(seconds):
            t = np.arange(rate, dtype=np.float64)
            t *= dt
            t += second  # second + k·dt, one array
            watts = rng.standard_normal(rate, dtype=np.float32)
            watts *= np.float32(0.001)
            watts += np.float32(0.1)
            writer(Samples(run, phase, "dmm", "W", t, watts))
            if second == 0:
                first_batch = _rss_mib()  # one batch's working set is in; growth counts after
            if (second + 1) % report_every == 0:
                click.echo(f"  {second + 1:>6} s streamed   RSS {_rss_mib():7.1f} MiB")
        writer(PhaseStop(phase, run, float(seconds), "success"))
        writer(RunStop(run, float(seconds), "success"))
        writer.close()
        write_s = time.perf_counter() - t_wall
        after_write = _rss_mib()
        total = 0
        first_read = None
        with Store(path) as store:
            for batch in store.sample_batches(run, "dmm"):
                total += len(batch["t"])
                first_read = first_read or _rss_mib()
        size_mib = path.stat().st_size / 2**20
        raw_mib = seconds * rate * 4 / 2**20
        click.echo(f"read back {total:,} samples batch by batch; file {size_mib:.1f} MiB = "
                   f"{size_mib / raw_mib:.3f} x the raw float32 values ({raw_mib:.1f} MiB)")
        click.echo(f"write {seconds * rate / write_s:,.0f} samples/s")
        after_read = _rss_mib()
        click.echo(f"RSS after write {after_write:.1f} MiB, after read {after_read:.1f} MiB")
        click.echo(f"RSS growth while streaming (first batch in -> end of write) "
                   f"{after_write - first_batch:+.1f} MiB; while reading back (first batch "
                   f"read -> last) {after_read - (first_read or after_read):+.1f} MiB")
        click.echo(f"peak RSS {_peak_rss_mib():.1f} MiB (over start, one batch's working set "
                   f"for writing and for reading included: {_peak_rss_mib() - baseline:.1f} MiB)")
