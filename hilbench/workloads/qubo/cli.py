"""`hilbench qubo`: write NeuroBench QUBO-MIS workload matrices, look up their target costs and
solve one workload through a driver."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

import click
import numpy as np

from hilbench.workloads.qubo import (
    TabuSettings,
    WorkloadError,
    edges_in_graph,
    find_target,
    generate_qubo,
    matrix_sha256,
    validate_workload,
)
from hilbench.workloads.qubo.published import published_target
from hilbench.workloads.qubo.targets import EXACT_BELOW_NODES

_NODES_HELP = "Number of graph nodes (>= 2)."
_DENSITY_HELP = (
    "Edge density in (0, 1]; the graph gets int(0.5 * density * nodes**2) edges "
    "(capped at the complete graph)."
)
_SEED_HELP = "Workload seed (>= 0); NeuroBench's tuning seeds are 0-4."


def _check_workload(nodes: int, density: float, seed: int) -> None:
    """Turn a bad workload into a usage error that names the offending option."""
    try:
        validate_workload(nodes, density, seed)
    except WorkloadError as exc:
        raise click.BadParameter(str(exc), param_hint=f"--{exc.field}") from exc


def _write_npy_atomically(path: Path, matrix: np.ndarray) -> None:
    """Write ``matrix`` with np.save to exactly ``path``; never leave a half-written file."""
    directory = path.parent
    if not directory.exists():
        raise click.BadParameter(f"directory {directory} does not exist", param_hint="--out")
    if not directory.is_dir():
        raise click.BadParameter(f"{directory} is not a directory", param_hint="--out")
    if path.is_dir():
        raise click.BadParameter(f"{path} is a directory, not a file", param_hint="--out")
    try:
        fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=directory)
    except OSError as exc:
        raise click.BadParameter(
            f"cannot write in {directory}: {exc.strerror}", param_hint="--out"
        ) from exc
    try:
        with os.fdopen(fd, "wb") as handle:
            np.save(handle, matrix, allow_pickle=False)
        os.replace(tmp_name, path)
    except OSError as exc:
        Path(tmp_name).unlink(missing_ok=True)
        raise click.BadParameter(
            f"cannot write {path}: {exc.strerror}", param_hint="--out"
        ) from exc


@click.group()
def qubo() -> None:
    """QUBO maximum-independent-set workloads, as NeuroBench defines them.

    A workload is (nodes, density, seed): networkx.gnm_random_graph(n, int(0.5*density*n**2),
    seed), with Q = -1 on the diagonal and +4 at (u,v) and (v,u) for each edge (int8).
    """


@qubo.command()
@click.option("--nodes", type=int, required=True, help=_NODES_HELP)
@click.option("--density", type=float, required=True, help=_DENSITY_HELP)
@click.option("--seed", type=int, default=0, show_default=True, help=_SEED_HELP)
@click.option(
    "--out",
    type=click.Path(dir_okay=False, path_type=Path),
    required=True,
    help="Where to write the matrix (NumPy .npy, int8, nodes x nodes).",
)
def generate(nodes: int, density: float, seed: int, out: Path) -> None:
    """Write the workload's QUBO matrix, byte-identical to the NeuroBench generator.

    Prints the edge count and the sha256 of the matrix bytes so runs can be cross-checked.
    """
    _check_workload(nodes, density, seed)
    matrix = generate_qubo(nodes, density, seed)
    _write_npy_atomically(out, matrix)
    click.echo(
        f"wrote {out}: {nodes}x{nodes} int8, {edges_in_graph(nodes, density)} edges, "
        f"sha256 {matrix_sha256(matrix)}"
    )


@qubo.command()
@click.option("--nodes", type=int, required=True, help=_NODES_HELP)
@click.option("--density", type=float, required=True, help=_DENSITY_HELP)
@click.option("--seed", type=int, default=0, show_default=True, help=_SEED_HELP)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object instead of text.")
@click.option("--no-cache", is_flag=True, help="Recompute a Tabu target even if it is cached.")
@click.option(
    "--tabu-reads",
    type=click.IntRange(min=1),
    default=TabuSettings().num_reads,
    show_default=True,
    help="Tabu reads (only for untabulated workloads with >= 50 nodes). Non-default values "
    "give an unofficial target and are recorded as such.",
)
@click.option(
    "--tabu-restarts",
    type=click.IntRange(min=0),
    default=TabuSettings().num_restarts,
    show_default=True,
    help="Tabu restarts per read (see --tabu-reads).",
)
@click.option(
    "--tabu-seed",
    type=click.IntRange(min=0, max=2**32 - 1),
    default=None,
    help="Tabu sampler seed  [default: the workload seed].",
)
@click.option(
    "--tabu-budget",
    type=click.FloatRange(min=0, min_open=True),
    default=None,
    help="Wall-clock budget in seconds for all Tabu reads, recorded with the target; reads "
    "stop when it is spent (a target cut short is marked as not the published definition).",
)
@click.option(
    "--kind",
    type=click.Choice(["official", "best-known", "bound"]),
    default="official",
    show_default=True,
    help="official: the NeuroBench target BKS-gap is defined against; best-known: the best "
    "feasible cost any solver here recorded, with provenance; bound: a cost no solver can beat, "
    "proven by OR-Tools CP-SAT within --time-limit.",
)
@click.option(
    "--time-limit",
    type=click.FloatRange(min=0, min_open=True),
    default=10.0,
    show_default=True,
    help="CP-SAT time limit in seconds (--kind bound); recorded with the bound.",
)
def target(
    nodes: int,
    density: float,
    seed: int,
    as_json: bool,
    no_cache: bool,
    tabu_reads: int,
    tabu_restarts: int,
    tabu_seed: int | None,
    tabu_budget: float | None,
    kind: str,
    time_limit: float,
) -> None:
    """Print a target cost of the workload: the integer is on the last line.

    The line before it says which kind it is and where it came from. official: the exact
    optimum for fewer than 50 nodes, the published NeuroBench table for tabulated workloads
    (seeds 0-4), otherwise the best of D-Wave Tabu with 100 reads and 50 restarts (seeded,
    cached under $XDG_CACHE_HOME/hilbench or ~/.cache/hilbench; can take minutes for large
    graphs). best-known and bound: see --kind; `hilbench qubo targets` computes them for a grid.
    """
    _check_workload(nodes, density, seed)
    if kind != "official":
        from hilbench.workloads.qubo.cli_targets import print_other_target

        print_other_target(kind, nodes, density, seed, time_limit, as_json)
        return
    if nodes >= EXACT_BELOW_NODES and published_target(nodes, density, seed) is None:
        click.echo("no published target: using D-Wave Tabu (cached when possible)", err=True)
    try:
        result = find_target(
            nodes,
            density,
            seed,
            cache=not no_cache,
            tabu_settings=TabuSettings(
                num_reads=tabu_reads, num_restarts=tabu_restarts, time_budget_s=tabu_budget
            ),
            tabu_seed=tabu_seed,
        )
    except RuntimeError as exc:
        raise click.ClickException(str(exc)) from exc
    if as_json:
        click.echo(
            json.dumps(
                {
                    "nodes": nodes,
                    "density": density,
                    "seed": seed,
                    "edges": edges_in_graph(nodes, density),
                    "cost": result.cost,
                    "source": result.source,
                    "detail": result.detail,
                },
                sort_keys=True,
            )
        )
        return
    edges = edges_in_graph(nodes, density)
    click.echo(f"workload: nodes={nodes} density={density} seed={seed} edges={edges}")
    click.echo(f"source: {result.describe()}")
    click.echo(str(result.cost))


@qubo.command()
@click.option("--nodes", type=int, required=True, help=_NODES_HELP)
@click.option("--density", type=float, required=True, help=_DENSITY_HELP)
@click.option("--seed", type=int, default=0, show_default=True, help=_SEED_HELP)
@click.option(
    "--solver",
    default="anytime",
    show_default=True,
    help="Solver of the driver (cpu: sa, tabu, anytime).",
)
@click.option(
    "--timeout",
    "timeout_s",
    type=float,
    required=True,
    help="Fixed timeout in seconds (1e-3 ... 1e2): solving plus the cost check must end by then.",
)
@click.option(
    "--run-seed", type=int, default=0, show_default=True, help="Seed of the solver's own draws."
)
@click.option(
    "--driver",
    "driver_name",
    default="cpu",
    show_default=True,
    help="Driver (entry point in hilbench.drivers) run in this process, as an agent runs it.",
)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object on the last line.")
@click.option(
    "--record",
    is_flag=True,
    help="Offer a feasible answer to the best-known file (see `hilbench qubo target --kind`).",
)
@click.option(
    "--target",
    "target_kind",
    type=click.Choice(["official", "best-known", "none"]),
    default="official",
    show_default=True,
    help="What the gap is against. official: exact below 50 nodes, else the published table, "
    "else D-Wave Tabu (100 reads × 50 restarts; from the cache when computed before, else "
    "computed AFTER the answer is printed, with progress: minutes at n ≥ 1000). best-known: "
    "the best feasible cost recorded here. none: no gap, nothing computed.",
)
def solve(
    nodes: int,
    density: float,
    seed: int,
    solver: str,
    timeout_s: float,
    run_seed: int,
    driver_name: str,
    as_json: bool,
    record: bool,
    target_kind: str,
) -> None:
    """Solve one workload with one solver for a fixed timeout, through the driver's own code.

    The returned state is checked here as a campaign checks it: cost recomputed, independence
    tested, the driver's claimed cost verified. ``overrun`` is true when the actual time passed
    the requested one by more than max(5 %, 0.5 ms). The answer comes first; ``gap`` is the
    BKS-gap to the target ``--target`` names (null for an infeasible answer or without a
    target). A Tabu target that is neither published nor cached is computed after the answer,
    with its sampler seed shown.
    """
    from hilbench.agent.driver import DriverError, load_driver
    from hilbench.wire.link import AgentError
    from hilbench.workloads.qubo.check import SolutionError
    from hilbench.workloads.qubo.procedures.local import load_workload, solve_fixed_timeout

    _check_workload(nodes, density, seed)
    try:
        driver = load_driver(driver_name)
    except DriverError as exc:
        raise click.BadParameter(str(exc), param_hint="--driver") from exc
    try:
        workload, _ = load_workload(driver, nodes, density, seed, [solver])
        solved = solve_fixed_timeout(driver, workload, solver, timeout_s, run_seed, None)
    except (DriverError, AgentError, SolutionError) as exc:
        raise click.ClickException(str(exc)) from exc
    finally:
        driver.close()
    outcome = solved.summary()  # printed as JSON under --json
    if record and solved.feasible:
        from hilbench.workloads.qubo.best_known import BestKnownStore

        outcome["recorded_best_known"] = BestKnownStore().offer(
            nodes,
            density,
            seed,
            solved.state,
            {"solver": solver, "driver": driver_name, "timeout_s": timeout_s,
             "run_seed": run_seed, "by": "hilbench qubo solve --record"},
        )
    check = solved.check
    state = ("feasible" if check.feasible else
             f"INFEASIBLE ({check.violated_edges} violated edges)")
    over = " OVERRUN" if solved.overrun else ""
    # The answer first: on stderr under --json, whose last stdout line is the one object.
    say = (lambda text: click.echo(text, err=True)) if as_json else click.echo
    say(f"{solver} on n={nodes} d={density:g} seed={seed}: cost {check.cost}, {state}, "
        f"set size {check.set_size}; time: requested {timeout_s:g} s, actual "
        f"{solved.reply.actual_s:.6f} s{over}")
    _add_gap(outcome, _solve_target(target_kind, nodes, density, seed, say))
    if as_json:
        click.echo(json.dumps(outcome, sort_keys=True, default=str))
        return
    gap = "n/a" if outcome["gap"] is None else f"{outcome['gap']:.4f}"
    click.echo(f"BKS-gap {gap} ({outcome['target_note']})")


def _solve_target(kind: str, nodes: int, density: float, seed: int, say) -> dict:
    """The target ``qubo solve --target KIND`` asks for, as {cost, source, detail, note};
    a Tabu run happens only here, after the answer, and says what it is doing meanwhile."""
    if kind == "none":
        return {"cost": None, "source": "none", "detail": {}, "note": "no target: --target none"}
    if kind == "best-known":
        from hilbench.workloads.qubo.best_known import BestKnownStore

        best = BestKnownStore().get(nodes, density, seed)
        if best is None:
            return {"cost": None, "source": "best-known", "detail": {},
                    "note": "no best-known cost recorded for this workload"}
        return {"cost": best.cost, "source": "best-known",
                "detail": {"provenance": best.provenance},
                "note": f"target {best.cost}, best known ({best.provenance})"}
    from hilbench.workloads.qubo.targets import default_tabu_seed, known_target

    target = known_target(nodes, density, seed)
    if target is None:
        if nodes >= EXACT_BELOW_NODES:
            say(f"computing the official target: D-Wave Tabu, 100 reads × 50 restarts, sampler "
                f"seed {default_tabu_seed(seed)} (minutes at n ≥ 1000; cached afterwards; "
                "--target none skips it) …")
        with _ticking(say, "computing the target"):
            target = find_target(nodes, density, seed)
    return {"cost": target.cost, "source": target.source, "detail": target.detail,
            "note": f"target {target.cost}, {target.describe()}"}


def _add_gap(outcome: dict, target: dict) -> None:
    from hilbench.workloads.qubo import bks_gap

    cost = target["cost"]
    outcome.update(
        target=cost,
        target_source=target["source"],
        target_detail=target["detail"],
        target_note=target["note"],
        gap=bks_gap(outcome["cost"], cost) if cost is not None and outcome["feasible"] else None,
    )
    if "sampler_seed" in target["detail"]:
        outcome["tabu_seed"] = target["detail"]["sampler_seed"]


class _ticking:
    """While a long computation runs, say every ``every_s`` how long it has taken."""

    def __init__(self, say, what: str, every_s: float = 15.0) -> None:
        import threading

        self.say, self.what, self.every_s = say, what, every_s
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._tick, daemon=True)

    def _tick(self) -> None:
        import time

        started = time.monotonic()
        while not self.done.wait(self.every_s):
            self.say(f"… {self.what}: {time.monotonic() - started:.0f} s")

    def __enter__(self) -> _ticking:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.done.set()
        self.thread.join()


def _register_targets() -> None:
    from hilbench.workloads.qubo.cli_targets import targets

    qubo.add_command(targets)


_register_targets()
