"""`hilbench bench asc-harness`: what the harness adds to each single-stream sample.

A cpu agent is spawned on loopback and the single-stream procedure runs over the ASC test split
(the synthetic fixture unless ``--data`` names a data set), exactly as a campaign runs it: model
loaded first, then the samples one at a time, the next only after the previous finished. Per
sample, harness overhead = the orchestrator's wall time for that sample − device-reported
(pre-processing + inference) time. An agent that offers ``samples`` (every hilbench agent,
protocol version 3) loads, runs and unloads each sample of a list beside the device: the
sample's wall time is its share of the list's run request→reply window (from the previous
sample's end to its own, plus an equal part of the request's transport); the list's audio is
loaded before, untimed, as LoadGen loads its sample library. Otherwise it is the round trip of
the sample's own ``run`` request. Printed as median and p99 next to the device time; the last
line is the summary.

The model does not change what is measured (timing only), so by default it is the fixed,
baseline-shaped int8 model of the reference vectors (random weights, no training needed);
``--model`` takes a trained ``.npz`` instead.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import click
import numpy as np

from hilbench.contracts.remote import RemoteDevice
from hilbench.orchestrator.campaign import AgentSpec
from hilbench.orchestrator.client import AgentClient
from hilbench.orchestrator.spawn import spawn_agent
from hilbench.workloads.asc.procedures.device import SampleRecord, run_single_stream, send_model
from hilbench.workloads.asc.procedures.run import ensure_fixture


def _us(values: np.ndarray) -> tuple[float, float]:
    """Median and p99 in microseconds."""
    return float(np.median(values) * 1e6), float(np.percentile(values, 99) * 1e6)


def _measure(slices: np.ndarray, model: object, passes: int, warmup: int) -> list[SampleRecord]:
    agent = spawn_agent(AgentSpec(id="asc-bench", driver="cpu", spawn=True))
    try:
        with AgentClient(agent.address, "asc-bench", **agent.client_keys()) as client:
            device = RemoteDevice(client)  # the procedures' own handle
            send_model(device, model)
            run_single_stream(device, slices[:warmup])  # untimed: caches, allocators
            records: list[SampleRecord] = []
            for _ in range(passes):
                records.extend(run_single_stream(device, slices))
            client.request("shutdown", timeout_s=5)
        return records
    finally:
        agent.stop()


@click.command()
@click.option(
    "--data",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    default=None,
    help="ASC data set directory [default: a synthetic fixture in a temporary directory].",
)
@click.option(
    "--model",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    default=None,
    help="Trained int8 model (.npz) [default: the fixed reference-vector model].",
)
@click.option("--limit", type=int, default=None, help="Test clips to use (ten samples each).")
@click.option("--passes", default=5, show_default=True, help="Times the test split is streamed.")
@click.option("--warmup", default=20, show_default=True, help="Untimed samples first.")
def asc_harness(
    data: Path | None, model: Path | None, limit: int | None, passes: int, warmup: int
) -> None:
    """Harness overhead per single-stream ASC sample: wall time minus device time."""
    from hilbench.workloads.asc import load_split
    from hilbench.workloads.asc.quant import QuantisedModel
    from hilbench.workloads.asc.vectors import fixed_model

    if passes < 1:
        raise click.BadParameter("must be at least 1", param_hint="--passes")
    int8_model = QuantisedModel.load(model) if model else fixed_model()
    rate = int8_model.mfe_config.sample_rate
    with tempfile.TemporaryDirectory(prefix="hilbench-asc-bench-") as tmp:
        root = data if data is not None else ensure_fixture(Path(tmp) / "fixture")
        test = load_split(root, "test", sample_rate=rate, limit=limit)
    if len(test) == 0:
        raise click.ClickException(f"the test split of {root} is empty")
    records = _measure(test.slices, int8_model, passes, warmup)

    overhead = np.array([r.overhead_s for r in records])
    device = np.array([r.device_s for r in records])
    round_trip = np.array([r.round_trip_s for r in records])
    pre = np.array([r.preprocess_s for r in records])
    inf = np.array([r.inference_s for r in records])
    source = "synthetic fixture" if data is None else str(data)
    click.echo(
        f"{len(records)} single-stream samples ({len(test)} test samples × {passes} passes, "
        f"{source}), cpu agent on loopback"
    )
    for label, values in (
        ("device pre-processing", pre),
        ("device inference", inf),
        ("device total", device),
        ("wall time per sample", round_trip),
        ("harness overhead", overhead),
    ):
        median, p99 = _us(values)
        click.echo(f"{label:<24} median {median:9.1f} us   p99 {p99:9.1f} us")
    median, p99 = _us(overhead)
    device_median, _ = _us(device)
    click.echo(
        f"harness overhead per sample: median {median:.1f} us, p99 {p99:.1f} us "
        f"(device time median {device_median:.1f} us)"
    )
