"""`hilbench bench qubo-generator`: time and memory to generate NeuroBench QUBO workloads.

The generator replays networkx.gnm_random_graph's random draw without building the Graph (see
:mod:`hilbench.workloads.qubo.generator`). Per size this prints the time to produce the int8
matrix and the process's peak resident memory, and with ``--compare-networkx`` the time of
NeuroBench's own recipe (networkx Graph, then the matrix) on the same workload, with a check that
both give the same bytes. Peak memory is the process high-water mark, so sizes run in the order
given and the figure of a size includes what earlier sizes reached.
"""

from __future__ import annotations

import resource
import time

import click

from hilbench.workloads.qubo.generator import (
    edges_in_graph,
    generate_qubo,
    matrix_sha256,
    qubo_graph,
    qubo_matrix_from_graph,
)


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


@click.command("qubo-generator")
@click.option(
    "--sizes",
    default="1000:0.25,10000:0.25",
    show_default=True,
    help="nodes:density pairs, comma-separated.",
)
@click.option("--seed", type=int, default=0, show_default=True)
@click.option(
    "--compare-networkx",
    type=int,
    default=2000,
    show_default=True,
    help="Also time the networkx Graph path for sizes up to this many nodes (0: never).",
)
def qubo_generator(sizes: str, seed: int, compare_networkx: int) -> None:
    """Seconds and peak memory to generate each workload's int8 matrix."""
    last = ""
    for item in sizes.split(","):
        nodes_text, density_text = item.split(":")
        n, d = int(nodes_text), float(density_text)
        started = time.perf_counter()
        matrix = generate_qubo(n, d, seed)
        took = time.perf_counter() - started
        line = (
            f"n={n} d={d:g} seed={seed}: {edges_in_graph(n, d)} edges, replay {took:.2f} s, "
            f"peak RSS {_peak_mb():.0f} MB"
        )
        if n <= compare_networkx:
            started = time.perf_counter()
            reference = qubo_matrix_from_graph(qubo_graph(n, d, seed))
            graph_s = time.perf_counter() - started
            same = matrix_sha256(reference) == matrix_sha256(matrix)
            line += f"; networkx Graph {graph_s:.2f} s, identical bytes: {same}"
        click.echo(line)
        last = line
        del matrix
    click.echo(f"last: {last}")
