"""`hilbench bench flat-cost`: does a unit cost the same at the end of a long campaign as at
its start?

Runs one long campaign on the simulated bench the way `hilbench run` does — the campaign
runner in this process, a spawned CPU agent, the simulated Keysight meter reading every
millisecond, a real store file — with units of a few milliseconds (the first registered
workload's bench campaign: QUBO, n = 10 and 25 by default, as shipped). It prints runs per
second in the first and the last tenth of the campaign, the
orchestrator's RSS after the first tenth and at the end, and its growth per run (least squares
over the last nine tenths, so start-up allocations are not counted). ``--trace`` also prints
the sites whose Python allocations grew most between the first tenth and the end
(tracemalloc; it slows every run, so read its throughput figures apart).
"""

from __future__ import annotations

import gc
import tempfile
import time
from pathlib import Path

import click


def _campaign(units: int, sizes: list[int], timeout_s: float, meter: bool):
    """Five instances a size, repeated to ``units``, of the bench workload (noisy meter)."""
    from hilbench.bench.bench_campaign import campaign_data
    from hilbench.orchestrator.campaign import parse_campaign

    return parse_campaign(campaign_data("flat-cost", units, timeout_s, sizes=sizes, instances=5,
                                        meter=meter, noise_std_w=0.01), "flat-cost.toml")


def _children_rss(process) -> dict[str, int]:
    """RSS of each process hilbench started (the agent, the simulated meter), by role."""
    import psutil

    out: dict[str, int] = {}
    for child in process.children(recursive=True):
        try:
            line = child.cmdline()
            role = next((w for w in ("agent", "sim-meter") if w in line), child.name())
            out[f"{role} (pid {child.pid})"] = child.memory_info().rss
        except psutil.Error:
            continue
    return out


def _slope(xs: list[float], ys: list[float]) -> float:
    """Least-squares slope of ys over xs."""
    n = len(xs)
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sxx if sxx else 0.0


def _print_memory(rss: list[int], children: dict[int, dict[str, int]], snapshots: list,
                  tenth: int, total: int) -> None:
    """RSS over the campaign, per child process, and (traced) the allocation sites that grew."""
    half = total // 2
    late = _slope(list(range(half, total)), [float(r) for r in rss[half:]])
    click.echo(f"RSS after the first tenth {rss[tenth - 1] / 2**20:.1f} MiB, at the end "
               f"{rss[-1] / 2**20:.1f} MiB ({late:+.0f} B/run over the second half: caches "
               "that fill up, such as SQLite's 2 MiB page cache, grow early and stop)")
    for name, start_rss in children.get(tenth, {}).items():
        end_rss = children.get(total, {}).get(name)
        if end_rss is not None:
            click.echo(f"  {name}: RSS {start_rss / 2**20:.1f} → {end_rss / 2**20:.1f} MiB "
                       f"({(end_rss - start_rss) / (total - tenth):+.0f} B/run)")
    if len(snapshots) == 2:
        click.echo("allocation sites that grew most from the first tenth to the end:")
        for stat in snapshots[1].compare_to(snapshots[0], "traceback")[:8]:
            frames = " <- ".join(f"{Path(f.filename).name}:{f.lineno}"
                                 for f in reversed(list(stat.traceback)[-5:]))
            click.echo(f"  {stat.size_diff / (total - tenth):+8.1f} B/run "
                       f"({stat.count_diff:+d} blocks)  {frames}")


@click.command("flat-cost")
@click.option("--units", type=click.IntRange(min=100), default=3000, show_default=True,
              help="Runs in the campaign (the issue's soak: 10 200).")
@click.option("--nodes", default="10,25", show_default=True,
              help="Problem sizes (nodes) of the bench campaign, comma-separated.")
@click.option("--timeout", "timeout_s", type=float, default=0.001, show_default=True,
              help="Each unit's fixed timeout, seconds.")
@click.option("--meter/--no-meter", default=True, show_default=True,
              help="Read the device with the simulated Keysight meter every millisecond.")
@click.option("--trace", is_flag=True,
              help="Also list the allocation sites that grew most (tracemalloc; slower).")
@click.option("--db", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Store file [default: a temporary one, removed afterwards].")
def flat_cost(units: int, nodes: str, timeout_s: float, meter: bool, trace: bool,
              db: Path | None) -> None:
    """Runs/s in the first and last tenth of a long simulated campaign, and RSS growth per run."""
    import psutil

    from hilbench.bench.bench_campaign import bench_fixture
    from hilbench.orchestrator.interrupt import signals_interrupt
    from hilbench.orchestrator.runner import CampaignAborted, CampaignRunner

    campaign = _campaign(units, [int(n) for n in nodes.split(",") if n.strip()], timeout_s, meter)
    process = psutil.Process()
    stamps: list[float] = []
    rss: list[int] = []
    snapshots = []
    children: dict[int, dict[str, int]] = {}
    if trace:
        import tracemalloc

        tracemalloc.start(8)
    with tempfile.TemporaryDirectory(prefix="hilbench-flat-cost-") as tmp:
        store = db if db is not None else Path(tmp) / "flat-cost.sqlite"
        runner = CampaignRunner(campaign, store, again=True)
        total = len(runner.units)
        tenth = max(1, total // 10)

        def on_unit_done(_unit, status: str, _run_uid: str | None) -> None:
            if status == "retried":  # an unverified run whose unit runs again: not done yet
                return
            stamps.append(time.perf_counter())
            rss.append(process.memory_info().rss)
            done = len(stamps)
            if done in (tenth, total):
                children[done] = _children_rss(process)
                if trace:
                    gc.collect()  # what is still referenced, not garbage awaiting collection
                    snapshots.append(tracemalloc.take_snapshot())
                    if done == total:  # comparing the snapshots under tracing took 30x longer
                        tracemalloc.stop()
            if done % max(1, total // 20) == 0:
                click.echo(f"  {done}/{total} runs, RSS {rss[-1] / 2**20:.1f} MiB", err=True)

        runner.on_unit_done = on_unit_done
        click.echo(f"{total} {bench_fixture().LABEL} runs (n = {nodes}, {timeout_s * 1e3:g} ms each"
                   f"{', simulated meter at 1 ms' if meter else ''}); store {store}", err=True)
        started = time.perf_counter()
        try:
            with signals_interrupt():
                outcome = runner.run()
        except CampaignAborted as exc:  # e.g. a meter that dropped readings on a loaded host
            raise click.ClickException(f"after {len(stamps)} run(s): {exc}") from None
        elapsed = time.perf_counter() - started
    if outcome.failed or len(stamps) < total:
        raise click.ClickException(f"{outcome.failed} run(s) failed, {len(stamps)} of {total} "
                                   "done: the figures would not describe a working campaign")
    first = (tenth - 1) / (stamps[tenth - 1] - stamps[0]) if tenth > 1 else float("nan")
    last = tenth / (stamps[-1] - stamps[-1 - tenth])
    growth = _slope(list(range(tenth, total)), [float(r) for r in rss[tenth:]])
    click.echo(f"runs: {total} in {elapsed:.1f} s ({total / elapsed:.1f} runs/s overall)")
    _print_memory(rss, children, snapshots if trace else [], tenth, total)
    click.echo(f"runs/s first tenth {first:.1f}, last tenth {last:.1f} "
               f"({last / first:.0%} of first); RSS growth {growth:+.0f} B/run")
