"""`hilbench bench soak`: a time-compressed night of the daemon on the simulated bench.

Queues ``--campaigns`` campaigns of 1 ms units (the first registered workload's bench
campaign: QUBO, n = 10-25, as shipped; simulated meter) totalling ``--units``
units, adds a ``* * * * *`` schedule (priority 1, so each fire's item runs after the campaign
in progress, while queued work remains), and while the daemon works SIGKILLs it
``--daemon-kills`` times and an agent ``--agent-kills`` times at random moments (between 12 %
and 85 % of the units), restarting the daemon each time (the worker restarts the agent). Then
it checks the store: every unit of every item once (lost 0, duplicated 0), runs retried, daemon
RSS, throughput in the first and last tenth, and the latency of `status` asked over the
control socket every 0.25 s throughout.

Throughput is units per second of the time the daemon had work: the units in order of
completion, each costing the time since the unit before it, less any part of that time when no
queue item existed (waiting for the schedule's next fire); a unit whose wait spans a SIGKILL is
the restart's outage and is left out. Idle waits and outages are printed apart.
"""

from __future__ import annotations

import random
import tempfile
import time
from pathlib import Path

import click

from hilbench.bench.bench_campaign import campaign_file
from hilbench.bench.daemon_harness import (
    DaemonProc,
    accounting,
    busy_throughput,
    env_note,
    successes,
    unit_keys,
)
from hilbench.daemon.control import ControlError, request
from hilbench.daemon.queue_db import QueueDB


@click.command()
@click.option("--units", type=click.IntRange(min=40), default=10_000, show_default=True)
@click.option("--campaigns", type=click.IntRange(min=1), default=20, show_default=True)
@click.option("--fires", type=click.IntRange(min=0), default=3, show_default=True,
              help="Schedule fires (one a minute) that must have queued an item.")
@click.option("--daemon-kills", type=click.IntRange(min=0), default=5, show_default=True)
@click.option("--agent-kills", type=click.IntRange(min=0), default=5, show_default=True)
@click.option("--seed", type=int, default=0, show_default=True, help="Kill moments.")
@click.option("--dir", "folder", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Keep the store and logs here [default: a temporary folder].")
def soak(units: int, campaigns: int, fires: int, daemon_kills: int, agent_kills: int, seed: int,
         folder: Path | None) -> None:
    """A night of queued and scheduled campaigns with the daemon and agents SIGKILLed.

    Prints units done, ended unverified (their timing not confirmed: stored, not lost),
    retried, lost and duplicated (every unit of every item checked in the
    store), the daemon's RSS, `status` latency over the control socket, and units per second
    in the first and the last tenth of the units by completion order, over the time the daemon
    had work: each unit costs the time since the one before it, less any time with nothing
    queued or running (waiting for a schedule fire); units whose wait spans a SIGKILL are the
    restart's outage and are left out. Idle and outage seconds are printed apart.
    """
    with tempfile.TemporaryDirectory(prefix="hilbench-soak-") as tmp:
        _soak(units, campaigns, fires, daemon_kills, agent_kills, seed, folder or Path(tmp))


# complexity: the soak's watch loop: each branch one event the night must survive (kill, status ask,
# fire)
def _soak(units: int, campaigns: int, fires: int, daemon_kills: int, agent_kills: int,  # noqa: C901
          seed: int, folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    db = folder / "soak.sqlite"
    config = folder / "daemon.toml"
    config.write_text("[daemon]\nretries = 50\nretry_delay_s = 0.5\nbusy_delay_s = 0.5\n"
                      "poll_s = 0.1\n")
    per = units // campaigns
    expected: dict[int, set[str]] = {}
    with QueueDB(db) as q:
        for i in range(campaigns):
            path = campaign_file(folder, f"soak-{i:02d}", per)
            expected[q.add(str(path), path.read_text(), f"soak-{i:02d}")] = unit_keys(path)
        nightly = campaign_file(folder, "soak-scheduled", 40)
        sid = q.add_schedule(name="soak-scheduled", source_path=str(nightly),
                             content=nightly.read_text(), cron="* * * * *", tz="UTC",
                             missed="run-once", trials=None, record=None, priority=1,
                             now=time.time())
    nightly_keys = unit_keys(nightly)
    total = sum(len(k) for k in expected.values())
    rng = random.Random(seed)
    kills = sorted([(rng.uniform(0.12, 0.85) * total, "daemon") for _ in range(daemon_kills)]
                   + [(rng.uniform(0.12, 0.85) * total, "agent") for _ in range(agent_kills)])
    click.echo(f"soak: {total} units in {campaigns} queued campaigns + a '* * * * *' schedule "
               f"({len(nightly_keys)} units a fire), {daemon_kills} daemon and {agent_kills} agent "
               f"SIGKILLs; store {db}; {env_note()}")
    daemon = DaemonProc(db, config)
    daemon.start()
    t0 = time.time()
    rss_first: float | None = None
    rss_last_start: float | None = None
    restarted_at = 0
    done_kills = {"daemon": 0, "agent": 0}
    kill_times: list[float] = []
    done_at_kill = -1
    latencies: list[float] = []
    next_status = 0.0
    last_report = 0.0
    # One read connection for the whole night, looked through every 0.2 s: the watcher's own
    # work shares the two cores with the daemon it measures (opening the queue anew four
    # times a look cost ~10 ms each time).
    watch = QueueDB(db)
    try:
        while True:
            now = time.monotonic()
            done = successes(watch)
            if rss_first is None and done >= 50:
                rss_first = daemon.rss_mib()
            # A unit done after the last kill first: two kills in one gap between completions
            # would be one outage (units come faster than this loop looks, ~70/s).
            if kills and done >= kills[0][0] and done > done_at_kill:
                _, what = kills.pop(0)
                if what == "daemon":
                    kill_times.append(time.time())
                    daemon.kill()
                    done_at_kill = successes(watch)
                    daemon.start()
                    rss_last_start, restarted_at = None, done
                    done_kills["daemon"] += 1
                else:
                    agents = daemon.agents()
                    if agents:
                        kill_times.append(time.time())
                        rng.choice(agents).kill()
                        done_at_kill = successes(watch)
                        done_kills["agent"] += 1
                    else:  # between campaigns: try again a moment later
                        kills.insert(0, (done + 5, "agent"))
            if rss_last_start is None and done >= restarted_at + 50:
                rss_last_start = daemon.rss_mib()  # this incarnation, once it is under way
            if now >= next_status:
                next_status = now + 0.25
                info_addr = watch.daemon_info().get("control")
                started = time.perf_counter()
                try:
                    request(info_addr, "status", timeout_s=5)
                    latencies.append(time.perf_counter() - started)
                except ControlError:
                    pass  # restarting
            if now - last_report > 15:
                last_report = now
                click.echo(f"  {time.time() - t0:6.0f} s: {done} units done; kills so far "
                           f"{done_kills}", err=True)
            queued = watch.items()
            fired = [f for f in watch.fires(sid, 1000) if f["outcome"] == "queued"]
            finished = {h["id"] for h in watch.history(100000)}
            if not queued and set(expected) <= finished and len(fired) >= fires and not kills:
                break
            time.sleep(0.2)
        rss_end = daemon.rss_mib()
    finally:
        watch.close()
        daemon.stop()
    wall = time.time() - t0
    with QueueDB(db) as q:
        q.remove_schedule(sid)
        for f in fired:
            expected[f["item_id"]] = nightly_keys
        coalesced = sum(f["outcome"] == "coalesced" for f in q.fires(sid, 1000))
    acc = accounting(db, expected)
    speed = busy_throughput(db, kill_times)
    latencies.sort()
    p99 = latencies[min(len(latencies) - 1, int(0.99 * len(latencies)))] if latencies else None
    click.echo(f"campaigns: {campaigns} queued + {len(fired)} from schedule fires "
               f"({coalesced} fires coalesced); wall {wall:.0f} s")
    click.echo(f"kills: daemon {done_kills['daemon']}, agent {done_kills['agent']} (SIGKILL)")
    click.echo(f"units done {acc['done']}, ended unverified {acc['unverified']}, retried "
               f"{acc['retried']}, lost {acc['lost']}, "
               f"duplicated {acc['duplicated']}; items not completed: "
               f"{acc['unfinished_items'] or 'none'}")
    click.echo(f"daemon RSS: {rss_first or float('nan'):.1f} MiB at start (first incarnation), "
               f"{rss_last_start or float('nan'):.1f} -> {rss_end:.1f} MiB over the last "
               f"incarnation")
    if p99 is not None:
        click.echo(f"status over the control socket: {len(latencies)} asks, median "
                   f"{latencies[len(latencies) // 2] * 1e3:.1f} ms, p99 {p99 * 1e3:.1f} ms")
    click.echo(f"time left out of throughput: {speed.idle_s:.0f} s idle (nothing queued: "
               f"waiting for a schedule fire), {speed.outage_s:.0f} s of outage over "
               f"{speed.outages} SIGKILL(s) (each from the last unit before it to the first "
               "after)")
    click.echo(f"units/s while the daemon had work, by completion order ({speed.tenth} units a "
               f"tenth): first tenth {speed.first:.1f}, last tenth {speed.last:.1f} "
               f"({100 * speed.last / speed.first:.0f} % of first)")

