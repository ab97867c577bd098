"""`hilbench bench reference`: how an honest agent's echoes compare with the orchestrator's own
reference responder's, the figure :data:`hilbench.wire.link_probe.REFERENCE_FACTOR` rests on.

An agent process (spawned on loopback, as a campaign's ``spawn = true`` agent) and the reference
responder (:mod:`hilbench.orchestrator.reference_link`) are echoed one after the other, pool by
pool, with the shapes timed phases use (1 KiB back to back, 4 KiB after 1 ms and after 20 ms
idle), through the very call a phase makes (:func:`hilbench.orchestrator.phases.link_bounds`:
the pools are kept and topped up as a campaign's are). Each pair gives the ratios of the two
medians and of the two 75th percentiles; a ratio past the factor holds an honest agent to the
reference.
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
from hilbench.wire.link_probe import MIN_ECHOES, REFERENCE_FACTOR, Echo, LinkBound

SHAPES = (Echo(1024), Echo(4096, work_s=1e-3), Echo(4096, work_s=20e-3))


def measure(pairs: int) -> list[LinkBound]:
    """``pairs`` honest agent pools, each held to (and carrying) the reference's pool taken just
    before it, shapes in turn, through the phases' own path
    (:func:`hilbench.orchestrator.phases.link_bounds`)."""
    agent = spawn_agent(AgentSpec(id="bench", driver="cpu", spawn=True))
    out: list[LinkBound] = []
    try:
        with AgentClient(agent.address, "bench", **agent.client_keys()) as client:
            for i in range(pairs):
                (link,) = link_bounds([client], SHAPES[i % len(SHAPES)])
                assert link is not None and link.reference is not None
                out.append(link)
    finally:
        agent.stop()
    return out


@click.command("reference")
@click.option("--pairs", default=60, show_default=True, type=click.IntRange(min=3),
              help="Pool pairs (agent, reference) of 24 echoes each.")
def reference_ratio(pairs: int) -> None:
    """An honest agent's median and 75th-percentile echo against the reference responder's,
    pool by pool.

    The agent's own echoes set its timing bound while each of the two is at most the factor
    times the reference's (agent protocol R13a); this prints the ratios' spread and how many
    pools would have held this honest agent to the reference.
    """
    links = measure(pairs)
    own = [link.own or link for link in links]
    click.echo(f"{pairs} pool pairs of {MIN_ECHOES} echoes or more, loopback; load average "
               f"{os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs")
    click.echo(f"agent median echo     {np.median([o.median_s for o in own]) * 1e3:.3f} ms "
               "(median of pools)")
    click.echo(f"reference median echo "
               f"{np.median([link.reference.median_s for link in links]) * 1e3:.3f} ms "
               "(median of pools)")
    largest = 0.0
    for name, figure in (("median", "median_s"), ("75th   ", "body_s")):
        ratios = np.asarray([getattr(o, figure) / getattr(link.reference, figure)
                             for o, link in zip(own, links, strict=True)])
        q = np.quantile(ratios, [0.0, 0.5, 0.9, 1.0])
        largest = max(largest, q[3])
        click.echo(f"{name} ratio min {q[0]:.2f}  median {q[1]:.2f}  p90 {q[2]:.2f}  "
                   f"max {q[3]:.2f}")
    held = sum(link.own is not None for link in links)
    click.echo(f"largest ratio {largest:.2f} against the factor {REFERENCE_FACTOR:g}: "
               f"{held} of {pairs} pools would hold this honest agent to the reference")
