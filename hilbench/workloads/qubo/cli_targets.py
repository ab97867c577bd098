"""Best-known values and proven bounds of QUBO targets, one workload or a grid on Dask.

A best-known value is computed by the cpu driver's `anytime` solver for a stated time (through
the driver's own code, as an agent runs it) and recorded with its independent set and
provenance; a proven bound comes from OR-Tools CP-SAT within a time limit (its best set is
offered as a best-known value too). A grid runs its cells as Dask tasks: on a LocalCluster by
default, or on a running cluster given by ``--scheduler``. Results are recorded by this process
only, so the best-known file has one writer.
"""

from __future__ import annotations

import json
from typing import Any

import click

from hilbench.workloads.qubo import find_target


def best_known_cell(nodes: int, density: float, seed: int, timeout_s: float) -> dict[str, Any]:
    """One Dask task: the anytime solver's best set for the workload within ``timeout_s``."""
    from hilbench.agent.driver import load_driver
    from hilbench.workloads.qubo.procedures.local import load_workload, solve_fixed_timeout

    driver = load_driver("cpu")
    try:
        workload, _ = load_workload(driver, nodes, density, seed, ["anytime"])
        outcome = solve_fixed_timeout(driver, workload, "anytime", timeout_s, 0, None)
    finally:
        driver.close()
    return {
        "nodes": nodes,
        "density": density,
        "seed": seed,
        "kind": "best-known",
        "cost": outcome.check.cost,
        "feasible": outcome.feasible,
        "state": outcome.state,
        "provenance": {
            "solver": "anytime",
            "driver": "cpu",
            "timeout_s": timeout_s,
            "run_seed": 0,
            "by": "hilbench qubo targets --kind best-known",
        },
    }


def bound_cell(nodes: int, density: float, seed: int, time_limit_s: float) -> dict[str, Any]:
    """One Dask task: CP-SAT's proven bound (and best set) within ``time_limit_s``."""
    from hilbench.workloads.qubo.certify import certify

    result = certify(nodes, density, seed, time_limit_s)
    return {
        "nodes": nodes,
        "density": density,
        "seed": seed,
        "kind": "bound",
        "cost": result.cost_bound,
        "best_cost": result.best_cost,
        "optimal": result.optimal,
        "feasible": True,
        "state": result.state,
        "detail": result.detail(),
        "provenance": {
            "solver": "cp-sat",
            "time_limit_s": time_limit_s,
            "workers": 1,
            "by": "OR-Tools CP-SAT (hilbench qubo target --kind bound or targets)",
        },
    }


def _record(cell: dict[str, Any]) -> bool:
    from hilbench.workloads.qubo.best_known import BestKnownStore

    if not cell["feasible"]:
        return False
    return BestKnownStore().offer(
        cell["nodes"], cell["density"], cell["seed"], cell["state"], cell["provenance"]
    )


def print_other_target(
    kind: str, nodes: int, density: float, seed: int, time_limit: float, as_json: bool
) -> None:
    """`hilbench qubo target --kind best-known|bound` for one workload."""
    from hilbench.workloads.qubo.best_known import BestKnownStore

    if kind == "bound":
        try:
            cell = bound_cell(nodes, density, seed, time_limit)
        except RuntimeError as exc:
            raise click.ClickException(str(exc)) from exc
        _record(cell)
        cell.pop("state")
        if as_json:
            click.echo(json.dumps(cell, sort_keys=True))
            return
        status = "optimal, certified" if cell["optimal"] else "not proven optimal"
        click.echo(
            f"kind: proven bound (OR-Tools CP-SAT, {time_limit:g} s, {status}); best set found "
            f"costs {cell['best_cost']}"
        )
        click.echo(str(cell["cost"]))
        return
    store = BestKnownStore()
    best = store.get(nodes, density, seed)
    if best is None:
        raise click.ClickException(
            f"no best-known value recorded for n={nodes} d={density:g} seed={seed} in "
            f"{store.path}; compute one with `hilbench qubo targets --kind best-known` or "
            "`hilbench qubo solve --record`"
        )
    if as_json:
        click.echo(
            json.dumps(
                {"nodes": nodes, "density": density, "seed": seed, "kind": "best-known",
                 "cost": best.cost, "provenance": best.provenance,
                 "independent_set": best.independent_set},
                sort_keys=True,
            )
        )
        return
    p = best.provenance
    click.echo(
        f"kind: best known (set of {len(best.independent_set)} nodes found by {p.get('solver')} "
        f"via {p.get('by')}, {p.get('recorded_at')}, file {store.path})"
    )
    click.echo(str(best.cost))


def _ints(text: str) -> list[int]:
    return [int(x) for x in text.split(",") if x.strip()]


def _floats(text: str) -> list[float]:
    return [float(x) for x in text.split(",") if x.strip()]


@click.command()
@click.option("--nodes", required=True, help="Sizes, comma-separated (e.g. 100,250).")
@click.option("--densities", default="0.05", show_default=True, help="Comma-separated.")
@click.option("--seeds", default="0,1,2,3,4", show_default=True, help="Comma-separated.")
@click.option(
    "--kind", type=click.Choice(["best-known", "bound"]), default="best-known", show_default=True
)
@click.option(
    "--budget",
    type=click.FloatRange(min=1e-3, max=1e2),
    default=10.0,
    show_default=True,
    help="Seconds per cell: the anytime solver's timeout (best-known) or CP-SAT's time limit.",
)
@click.option(
    "--scheduler",
    default=None,
    help="Address of a running Dask scheduler (tcp://host:8786)  [default: a LocalCluster].",
)
@click.option(
    "--workers",
    type=click.IntRange(min=1),
    default=None,
    help="LocalCluster workers  [default: Dask's choice for this machine].",
)
@click.option("--json", "as_json", is_flag=True, help="One JSON object per cell.")
def targets(
    nodes: str,
    densities: str,
    seeds: str,
    kind: str,
    budget: float,
    scheduler: str | None,
    workers: int | None,
    as_json: bool,
) -> None:
    """Compute best-known values or proven bounds for a grid of workloads on Dask.

    Every cell runs as one Dask task; each result is re-checked and recorded (best-known file,
    see `hilbench qubo target --kind best-known`) by this process. Prints, per cell, the value
    beside the official target and the gap between them.
    """
    try:
        from dask.distributed import Client, LocalCluster, as_completed
    except ImportError:
        raise click.ClickException(
            "target grids need Dask: pip install 'hilbench[targets]'"
        ) from None
    cells = [
        (n, d, s) for n in _ints(nodes) for d in _floats(densities) for s in _ints(seeds)
    ]
    task = best_known_cell if kind == "best-known" else bound_cell
    cluster = None
    if scheduler is None:
        cluster = LocalCluster(
            n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None
        )
    client = Client(scheduler or cluster)
    try:
        futures = [client.submit(task, n, d, s, budget, pure=False) for n, d, s in cells]
        click.echo(f"{len(cells)} cell(s) on {client.scheduler.address}", err=True)
        for done, future in enumerate(as_completed(futures), start=1):
            cell = future.result()
            official = find_target(cell["nodes"], cell["density"], cell["seed"])
            cell["recorded"] = _record(cell)
            cell.pop("state")
            cell["official"] = official.cost
            cell["official_source"] = official.source
            cell["gap_official_to_this"] = (official.cost - cell["cost"]) / abs(cell["cost"])
            if as_json:
                click.echo(json.dumps(cell, sort_keys=True))
            else:
                click.echo(
                    f"[{done}/{len(cells)}] n={cell['nodes']} d={cell['density']:g} "
                    f"seed={cell['seed']}: {kind} {cell['cost']} vs official {official.cost} "
                    f"({official.source}); official is {cell['gap_official_to_this']:+.3f} "
                    f"from it{' (recorded)' if cell['recorded'] else ''}"
                )
    finally:
        client.close()
        if cluster is not None:
            cluster.close()
