"""`hilbench bench xylo`: host time per 1 s sample of the simulated Xylo path, against real time.

Two figures per sample, each the path real work takes: Rockpool's ``AFESim`` turning 1 s of
audio into input spikes (resampled to 110 kHz, no cache), and ``XyloSim`` running the network on
those spikes. A real Xylo Audio 2 does both in real time or faster; the real-time factor says
how many seconds of host time one second of audio costs. Needs the xylo extra (.venv-xylo).
"""

from __future__ import annotations

import time
import warnings
from pathlib import Path

import click
import numpy as np


@click.command("xylo")
@click.option("--samples", default=3, show_default=True, type=click.IntRange(min=1),
              help="1 s audio samples to time (AFESim takes ~1.7 s each).")
@click.option("--network", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              default=None, help="A network file; default a baseline-sized untrained network "
                                 "(three hidden layers of 63).")
@click.option("--seed", default=0, show_default=True, type=int)
def xylo(samples: int, network: Path | None, seed: int) -> None:
    """Host AFE simulation time and XyloSim time per 1 s sample, versus real time."""
    from hilbench.agent.driver import DriverError
    from hilbench_drivers.xylo import vendor

    try:
        vendor.rockpool_xylo_a2()
    except DriverError as exc:  # run it with .venv-xylo/bin/hilbench
        raise click.ClickException(str(exc)) from None
    from hilbench_drivers.xylo.afe import HostFrontEnd
    from hilbench_drivers.xylo.network import AfeSettings, XyloNetwork
    from hilbench_drivers.xylo.train import build_network, to_network

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        x = vendor.rockpool_xylo_a2()
        net = XyloNetwork.load(network) if network else to_network(
            build_network((63, 63, 63), 4, 0.01, seed), ("a", "b", "c", "d"), 0.01, 16000,
            AfeSettings(), {})
        front_end = HostFrontEnd(net.afe, net.dt, net.sample_rate, cache_dir=None)
        sim = x.XyloSim.from_specification(**net.specification())
        rng = np.random.default_rng(seed)
        t = np.arange(net.sample_rate) / net.sample_rate
        afe_s, sim_s = [], []
        for i in range(samples):
            audio = (0.2 * np.sin(2 * np.pi * (300 + 200 * i) * t)
                     + 0.05 * rng.standard_normal(t.size)).astype(np.float32)
            t0 = time.perf_counter()
            raster = front_end.simulate(audio)
            afe_s.append(time.perf_counter() - t0)
            sim.reset_state()
            t0 = time.perf_counter()
            sim.evolve(raster.astype(int))
            sim_s.append(time.perf_counter() - t0)
            click.echo(f"sample {i}: AFESim {afe_s[-1]:.3f} s, XyloSim {sim_s[-1] * 1e3:.2f} ms "
                       f"({int(raster.sum())} input events)")
    click.echo(f"network: {net.inputs}-{net.hidden}-{net.outputs}, dt {net.dt * 1e3:g} ms, "
               f"AFE at {net.afe.fs} Hz")
    a, s = float(np.median(afe_s)), float(np.median(sim_s))
    click.echo(f"per 1 s sample (median of {samples}): AFESim {a:.3f} s = {a:.2f}x real time; "
               f"XyloSim {s * 1e3:.2f} ms = {s:.4f}x real time")
