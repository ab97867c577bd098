"""A JS220 on the simulated bench: the campaign's ``simulate = "<power model>"`` for this plugin.

The instrument is hilbench's simulated JS220 (:class:`hilbench.sim.js220.SimulatedJs220Driver`)
behind the same :class:`~.driver.Joulescope220` source a real one uses, so samples, GPI marker
edges and the stream bookkeeping go through the plugin's own code. What it measures is a
:class:`~hilbench.sim.device_feed.DeviceFeed` listening on loopback: the measured device's
driver reports its state changes and marker pin there over TCP (``configure {sim_meter}``), as
it does to the simulated DMM. The instrument has its own timebase (``drift_ppm``), a GPI input
latency (the settings' ``marker_latency_s``, drawn as a fixed fraction of it) and a
calibration error (``gain_error``); the feed keeps the truth.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from hilbench.sim.device_feed import DeviceFeed
from hilbench.sim.js220 import SimulatedJs220Driver
from hilbench.sim.power_model import DevicePowerModel

from .driver import Joulescope220
from .settings import Js220Settings

# The simulated GPI lags by this share of the stated marker latency: inside the statement, as
# a real instrument's should be, and not at its edge, so a test sees the bound is not luck.
LATENCY_SHARE = 0.5


class SimulatedBench:
    """The feed a simulated JS220 follows: ``address`` for the device link, ``stop``."""

    def __init__(self, feed: DeviceFeed) -> None:
        self.feed = feed
        self.address = feed.start()

    def stop(self) -> None:
        self.feed.stop()


def simulated_js220(model: DevicePowerModel, settings: Mapping[str, Any], *,
                    noise_std_w: float = 0.0, drift_ppm: float = 0.0, gain_error: float = 0.0,
                    seed: int | None = None) -> tuple[Joulescope220, SimulatedBench]:
    """A configured :class:`Joulescope220` reading a simulated JS220 that follows ``model``,
    and the bench (feed) a device reports to; ValueError naming a bad setting."""
    values = Js220Settings.from_mapping(dict(settings), where="settings of the simulated JS220")
    bench = SimulatedBench(DeviceFeed(model))
    try:
        api = SimulatedJs220Driver(bench.feed, drift_ppm=drift_ppm, noise_std_w=noise_std_w,
                                   gain_error=gain_error, seed=seed,
                                   gpi_latency_s=values.marker_latency_s * LATENCY_SHARE,
                                   supply_v=values.supply_voltage_v)
        source = Joulescope220("", values, api=lambda: api)
        source.configure()
        source.info = dataclasses.replace(
            source.info, simulated=True,
            simulation=(f"readings from hilbench's simulated JS220 following the {model.name} "
                        f"power model (drift {drift_ppm:g} ppm, gain error {gain_error:+g})"))
    except Exception:
        bench.stop()
        raise
    return source, bench
