"""`hilbench bench qubo-cpu`: BKS-gap, feasible fraction and actual / requested time per solver.

Every (nodes, seed) workload is loaded once into the cpu driver (untimed, all solvers prepared),
then each solver runs each fixed timeout through the driver's own ``run``, and every answer is
checked as a campaign checks it (:mod:`hilbench.workloads.qubo.procedures.local`). Per cell
the gap is the mean over feasible answers only; an infeasible answer counts in the feasible
fraction, never in the gap. ``actual/req`` is the median and largest ratio over the seeds. The
last line says in how many cells `anytime` has the lowest gap (ties count: at n=100 several
solvers reach the optimum; strictly lower cells are counted beside) and its worst actual /
requested ratio.

Timing on a shared machine is noisy: another process taking the core mid-run shows up as an
overrun, which is why the worst ratio is printed beside the median.
"""

from __future__ import annotations

import os
import statistics
from collections import defaultdict
from typing import TYPE_CHECKING, Any

import click

from hilbench.workloads.qubo import find_target

if TYPE_CHECKING:
    from hilbench.workloads.qubo.procedures.local import LocalSolve


def _parse_list(text: str, kind: type) -> list[Any]:
    try:
        return [kind(part) for part in text.split(",") if part.strip()]
    except ValueError as exc:
        raise click.BadParameter(f"{text!r}: {exc}") from exc


def _setups(setup_s: float | dict[str, float] | None) -> dict[str, float]:
    """The load reply's set-up time per solver (one figure for all: under "all")."""
    if setup_s is None:
        return {}
    return setup_s if isinstance(setup_s, dict) else {"all": setup_s}


def _cell(results: list[LocalSolve]) -> dict[str, Any]:
    gaps = [r.gap for r in results if r.gap is not None]
    ratios = [r.reply.actual_s / r.reply.requested_s for r in results]
    cpu = [r.reply.solver_params["cpu_s"] / r.reply.requested_s for r in results
           if "cpu_s" in r.reply.solver_params]
    return {
        "cpu_ratio_max": max(cpu) if cpu else None,
        "gap": statistics.fmean(gaps) if gaps else None,
        "feasible": sum(r.feasible for r in results) / len(results),
        "ratio_max": max(ratios),
        "ratio_median": statistics.median(ratios),
        "overruns": sum(r.overrun for r in results),
    }


def _fmt_cell(cell: dict[str, Any]) -> str:
    gap = "  infeas." if cell["gap"] is None else f"{cell['gap']:+9.4f}"
    return f"{gap} {cell['feasible']:4.0%} {cell['ratio_median']:6.2f}/{cell['ratio_max']:<6.2f}"


@click.command("qubo-cpu")
@click.option("--nodes", default="100,1000,2500", show_default=True, help="Sizes, comma-separated.")
@click.option("--density", type=float, default=0.05, show_default=True)
@click.option("--seeds", default="0,1,2", show_default=True, help="Workload seeds.")
@click.option(
    "--timeouts", default="0.001,0.01,0.1", show_default=True, help="Fixed timeouts in seconds."
)
@click.option("--solvers", default="sa,tabu,anytime", show_default=True)
def qubo_cpu(nodes: str, density: float, seeds: str, timeouts: str, solvers: str) -> None:
    """Per size × timeout and solver: mean BKS-gap over feasible answers, feasible fraction,
    and actual / requested time (median / worst over seeds)."""
    from hilbench.agent.driver import load_driver
    from hilbench.workloads.qubo.procedures.local import load_workload, solve_fixed_timeout

    sizes = _parse_list(nodes, int)
    seed_list = _parse_list(seeds, int)
    budgets = _parse_list(timeouts, float)
    names = _parse_list(solvers, str)
    results: dict[tuple[int, float, str], list[LocalSolve]] = defaultdict(list)
    driver = load_driver("cpu")
    try:
        for n in sizes:
            for seed in seed_list:
                target = find_target(n, density, seed).cost
                workload, reply = load_workload(driver, n, density, seed, names)
                click.echo(
                    f"loaded n={n} seed={seed} (target {target}); set-up "
                    + ", ".join(f"{k} {v:.2f} s" for k, v in _setups(reply.setup_s).items()),
                    err=True,
                )
                for budget in budgets:
                    for name in names:
                        results[(n, budget, name)].append(
                            solve_fixed_timeout(driver, workload, name, budget, seed, target)
                        )
    finally:
        driver.close()
    load = os.getloadavg()[0]
    click.echo(
        f"load average {load:.1f} on {os.cpu_count()} cores: a run that loses its core to "
        "another process overruns by the time it waited"
    )
    header = f"{'nodes':>6} {'timeout':>8} | " + " | ".join(
        f"{name:^30}" for name in names
    )
    click.echo(f"density {density:g}, seeds {seeds}; per solver: gap  feasible  actual/req med/max")
    click.echo(header)
    lowest = strict = cells = 0
    worst_anytime = 0.0
    worst_anytime_cpu = 0.0
    for n in sizes:
        for budget in budgets:
            row = {name: _cell(results[(n, budget, name)]) for name in names}
            click.echo(
                f"{n:>6} {budget:>8g} | " + " | ".join(f"{_fmt_cell(row[x]):^30}" for x in names)
            )
            if "anytime" in row:
                cells += 1
                worst_anytime = max(worst_anytime, row["anytime"]["ratio_max"])
                worst_anytime_cpu = max(worst_anytime_cpu, row["anytime"]["cpu_ratio_max"] or 0)
                mine = row["anytime"]["gap"]
                others = [row[x]["gap"] for x in names if x != "anytime"]
                if mine is not None and row["anytime"]["feasible"] == 1:
                    lowest += all(g is None or mine <= g for g in others)
                    strict += all(g is None or mine < g for g in others)
    if cells:
        click.echo(
            f"anytime: lowest gap in {lowest}/{cells} cells (strictly lower in {strict}); "
            f"worst actual/requested {worst_anytime:.3f} (CPU time it got/requested "
            f"{worst_anytime_cpu:.3f}: the rest was waiting for a core)"
        )
