"""`hilbench bench reference`: how an honest agent's echoes compare with the orchestrator's own
reference responder's, the figure :data:`hilbench.wire.link_probe.REFERENCE_FACTOR` rests on.

An agent process (spawned on loopback, as a campaign's ``spawn = true`` agent) and the reference
responder (:mod:`hilbench.orchestrator.reference_link`) are echoed one after the other, pool by
pool, with the shapes timed phases use (1 KiB back to back, 4 KiB after 1 ms and after 20 ms
idle), through the very call a phase makes (:func:`hilbench.orchestrator.phases.link_bounds`:
the pools are kept and topped up as a campaign's are). Each pair gives the ratio of the two
medians; a ratio past the factor holds an honest agent to the reference.
Run it on the bench host, idle and under the load the bench will see.
"""

from __future__ import annotations

import os

import click
import numpy as np

from hilbench.orchestrator.campaign import AgentSpec
from hilbench.orchestrator.client import AgentClient
from hilbench.orchestrator.phases import link_bounds
from hilbench.orchestrator.spawn import spawn_agent
from hilbench.wire.link_probe import MIN_ECHOES, REFERENCE_FACTOR, Echo

SHAPES = (Echo(1024), Echo(4096, work_s=1e-3), Echo(4096, work_s=20e-3))


def measure(pairs: int) -> list[tuple[float, float]]:
    """``pairs`` (agent median, reference median) in seconds, shapes taken in turn, each
    through the phases' own path (:func:`hilbench.orchestrator.phases.link_bounds`)."""
    agent = spawn_agent(AgentSpec(id="bench", driver="cpu", spawn=True))
    out: list[tuple[float, float]] = []
    try:
        with AgentClient(agent.address, "bench", **agent.client_keys()) as client:
            for i in range(pairs):
                (link,) = link_bounds([client], SHAPES[i % len(SHAPES)])
                assert link is not None and link.reference is not None
                out.append(((link.own or link).median_s, link.reference.median_s))
    finally:
        agent.stop()
    return out


@click.command("reference")
@click.option("--pairs", default=60, show_default=True, type=click.IntRange(min=3),
              help="Pool pairs (agent, reference) of 24 echoes each.")
def reference_ratio(pairs: int) -> None:
    """An honest agent's median echo against the reference responder's, pool by pool.

    The agent's own echoes set its timing bound while its median is at most the factor times
    the reference's (agent protocol R13a); this prints the ratios' spread and how far the
    largest stays from the factor.
    """
    medians = np.asarray(measure(pairs))
    ratios = medians[:, 0] / medians[:, 1]
    click.echo(f"{pairs} pool pairs of {MIN_ECHOES} echoes or more, loopback; load average "
               f"{os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs")
    click.echo(f"agent median echo     {np.median(medians[:, 0]) * 1e3:.3f} ms (median of pools)")
    click.echo(f"reference median echo {np.median(medians[:, 1]) * 1e3:.3f} ms (median of pools)")
    q = np.quantile(ratios, [0.0, 0.5, 0.9, 1.0])
    click.echo(f"ratio min {q[0]:.2f}  median {q[1]:.2f}  p90 {q[2]:.2f}  max {q[3]:.2f}")
    held = int(np.sum(ratios > REFERENCE_FACTOR))
    click.echo(f"largest ratio {q[3]:.2f} against the factor {REFERENCE_FACTOR:g}: "
               f"{held} of {pairs} pools would hold this honest agent to the reference")
