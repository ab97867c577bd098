"""`hilbench results`: stored runs as a summary table, one run in detail, or CSV / JSON streams.

The table summarises: runs of one campaign and procedure that differ only in seed and
repetition form one row (status counts, metric means over the successful runs with their
standard error), so tens of thousands of runs fit on a screen and answer in well under a second;
``--all`` lists runs one by one. Filters (``--campaign`` by name or id, ``--procedure``,
``--status``) run in SQL on indexed columns. CSV is long (one row per run and metric) so it
loads into any tool without knowing the metric names; JSON carries everything, with full uids
and unrounded numbers. Both are streamed: memory does not grow with the store.
"""

from __future__ import annotations

import csv
import json
import sys
from collections.abc import Iterable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import click

from hilbench.cli import EXIT_USAGE
from hilbench.cli.options import DB, DB_HELP
from hilbench.cli.options import db_path as store_location
from hilbench.documents import is_set
from hilbench.store import Store, StoreError
from hilbench.store.listing import STATUSES, RunFilter, RunGroup

SHORT_UID = 8
PARAMS_WIDTH = 48
PIPE_WIDTH = 160
DEFAULT_LIMIT = 50
CSV_COLUMNS = (
    "run_uid",
    "campaign_uid",
    "unit_key",
    "procedure",
    "status",
    "reason",
    "simulated",
    "params",
    "metric",
    "value",
    "uncertainty",
    "unit",
)
STATUS_STYLE = {"success": "green", "unverified": "cyan", "fail": "red", "abort": "yellow",
                "incomplete": "magenta"}


@click.command()
@click.option(
    "--db",
    "db_path",
    type=DB,
    default=None,
    help=DB_HELP,
)
@click.option("--run", "run_id", default=None, help="Show one run in detail (a unique uid prefix).")
@click.option(
    "--campaign",
    "campaign_ref",
    default=None,
    help="Only this campaign: its name (the newest campaign of that name) or a uid prefix.",
)
@click.option(
    "--procedure",
    default=None,
    help='Only this procedure as the listing names it ("WORKLOAD.SCENARIO"), or a workload '
         'for all of its procedures.',
)
@click.option(
    "--status", type=click.Choice(STATUSES), default=None, help="Only runs that ended so."
)
@click.option("--all", "every_run", is_flag=True, help="Table: one row per run, not per group.")
@click.option(
    "--limit",
    type=click.IntRange(min=0),
    default=DEFAULT_LIMIT,
    show_default=True,
    help="Table: at most this many rows (0: no limit); csv and json always give every run.",
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["table", "csv", "json"]),
    default="table",
    show_default=True,
    help="table for people, csv or json for tools (streamed to stdout).",
)
def results(
    db_path: Path | None,
    run_id: str | None,
    campaign_ref: str | None,
    procedure: str | None,
    status: str | None,
    every_run: bool,
    limit: int,
    fmt: str,
) -> None:
    """Show stored runs: a summary per replicate group, every run, or one run in detail.

    The table groups runs of a campaign and procedure whose unit keys differ only in seed and
    repetition (shown as seed=* and rep=*): how many ended in each status, and per metric the
    mean over the successful runs ± its standard error [number of runs]. Failed runs are
    counted, never averaged. --all lists runs one by one; --format csv|json gives everything.
    """
    path = store_location(db_path)
    try:
        with Store(path) as store:
            if run_id is not None:
                detail = _run_detail(store, store.find_run(run_id)["uid"])
                _show_detail(detail, fmt)
                return
            campaign_uid = None
            if campaign_ref:
                campaign_uid, note = store.resolve_campaign(campaign_ref)
                if note:
                    click.echo(note, err=True)
            flt = RunFilter(campaign_uid, procedure, status)
            if fmt == "json":
                _write_json(path, store.iter_runs(flt))
            elif fmt == "csv":
                _write_csv(store.iter_runs(flt))
            elif every_run:
                _print_runs_table(store, flt, limit, path)
                _print_stopped_campaigns(store, flt)
            else:
                _print_groups_table(store, flt, limit, path)
                _print_stopped_campaigns(store, flt)
    except StoreError as exc:
        click.echo(f"error: {exc}", err=True)
        raise SystemExit(EXIT_USAGE) from None


# -- gathering -------------------------------------------------------------------------------


def _run_detail(store: Store, run_uid: str) -> dict[str, Any]:
    run = store.run(run_uid)
    run["metrics"] = [_metric_view(m) for m in store.metrics(run_uid)]
    phases = store.phases(run_uid)
    names = {p["uid"]: p["name"] for p in phases}
    return {
        "run": run,
        "phases": phases,
        "event_counts": store.event_counts(run_uid),
        "samples": store.sample_sources(run_uid),
        "timing": [{"phase": names.get(e["phase_uid"], ""), **e["data"]}
                   for e in store.events(run_uid, "timing_check")],
    }


def _metric_view(metric: dict[str, Any]) -> dict[str, Any]:
    return {k: metric[k] for k in ("name", "value", "uncertainty", "unit", "meta")}


# -- streamed output -------------------------------------------------------------------------


def _write_json(path: Path, runs: Iterable[dict[str, Any]]) -> None:
    """One JSON document, ``{"db": …, "runs": […]}``, written run by run."""
    out = sys.stdout
    out.write(json.dumps({"db": str(path)})[:-1] + ', "runs": [')
    for i, run in enumerate(runs):
        out.write(("," if i else "") + "\n  " + json.dumps(run, default=str))
    out.write("\n]}\n")


def _write_csv(runs: Iterable[dict[str, Any]]) -> None:
    writer = csv.writer(sys.stdout, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    for run in runs:
        head = [
            run["uid"],
            run["campaign_uid"],
            run["unit_key"],
            run["procedure"],
            run["status"],
            run["reason"],
            run.get("simulation", "") if run.get("simulated") else "",
            json.dumps(run["params"], sort_keys=True, default=str),
        ]
        if not run["metrics"]:
            writer.writerow([*head, "", "", "", ""])
        for metric in run["metrics"]:
            writer.writerow(
                [
                    *head,
                    metric["name"],
                    _csv_number(metric["value"]),
                    _csv_number(metric["uncertainty"]),
                    metric["unit"],
                ]
            )


def _show_detail(detail: dict[str, Any], fmt: str) -> None:
    if fmt == "json":
        click.echo(json.dumps(detail, indent=2, default=str))
    elif fmt == "csv":
        _write_csv([detail["run"]])
    else:
        _print_detail(detail)


# -- tables ----------------------------------------------------------------------------------


def _print_groups_table(store: Store, flt: RunFilter, limit: int, path: Path) -> None:
    from rich.table import Table

    n_groups, shown = store.run_groups(flt, limit or None)
    if not shown:
        _say_no_runs(path, flt)
        return
    n_runs = store.count_runs(flt)
    table = Table(
        title=f"{n_runs} run(s) in {n_groups} group(s)",
        caption="metric: mean over successful runs ± standard error [runs]",
    )
    table.add_column("Campaign", overflow="fold")
    table.add_column("Procedure / units", overflow="fold")
    table.add_column("Runs")
    table.add_column("Metrics")
    for group in shown:
        table.add_row(
            _escape(group.campaign_name or group.campaign_uid[:SHORT_UID]),
            _escape(f"{group.procedure}\n{group.key}".rstrip()),
            _status_counts(group),
            "\n".join(_summary_line(m) for m in group.metrics) or "—",
        )
    console = _console()
    console.print(table)
    more = ""
    if len(shown) < n_groups:
        more = f"showing the newest {len(shown)} of {n_groups} groups (--limit 0 shows all); "
    console.print(
        f"{more}every run: --all, or --format csv|json; one campaign: --campaign NAME; "
        "one run: --run ID",
        highlight=False,
        markup=False,
    )


def _print_runs_table(store: Store, flt: RunFilter, limit: int, path: Path) -> None:
    from rich.table import Table

    total = store.count_runs(flt)
    if total == 0:
        _say_no_runs(path, flt)
        return
    # The newest runs when there are too many, printed oldest first.
    runs = list(store.iter_runs(flt, limit=limit or None, newest_first=True))[::-1]
    table = Table(title=f"{total} run(s)" + (f", the newest {len(runs)}" if len(runs) < total
                                             else ""))
    table.add_column("Run", no_wrap=True)
    table.add_column("Procedure / unit", overflow="fold")
    table.add_column("Params", overflow="fold")
    table.add_column("Status")
    table.add_column("Metrics")
    for run in runs:
        table.add_row(
            run["uid"][:SHORT_UID],
            _escape(f"{run['procedure']}\n{run['unit_key']}".rstrip()),
            _escape(_key_params(run["params"])),
            _status_cell(run),
            "\n".join(_metric_line(m) for m in run["metrics"]) or "—",
        )
    console = _console()
    console.print(table)
    if len(runs) < total:
        console.print(
            f"showing {len(runs)} of {total} runs (--limit 0 shows all; --format csv|json "
            "streams every run)",
            highlight=False,
            markup=False,
        )


STOPPED_SHOWN = 10


def _print_stopped_campaigns(store: Store, flt: RunFilter) -> None:
    """Campaigns that did not finish, with the reason they stopped: one that could not start
    has no run to show, and its row is the only record of what happened."""
    if flt.procedure is not None:
        return
    stopped = [
        c for c in store.campaigns()
        if c["status"] != "success" and flt.campaign_uid in (None, c["uid"])
        and flt.status in (None, c["status"])
    ]
    if not stopped:
        return
    click.echo("campaigns that did not finish:")
    for c in stopped[-STOPPED_SHOWN:]:
        when = _utc(c["wall_stop"] or c["wall_start"])
        reason = c["reason"] or ("still running, or its orchestrator was killed"
                                 if c["status"] == "incomplete" else "no reason stored")
        click.echo(f"  {c['uid'][:SHORT_UID]} {c['name']}: {c['status']} at {when}, "
                   f"{c['n_runs']} run(s): {reason}")
    if len(stopped) > STOPPED_SHOWN:
        click.echo(f"  and {len(stopped) - STOPPED_SHOWN} older")


def _say_no_runs(path: Path, flt: RunFilter) -> None:
    click.echo(f"no runs in {path}" + (" matching the filters" if flt != RunFilter() else ""))


def _console() -> Any:
    """A rich console; wider than 80 columns when stdout is a pipe or file, not a terminal."""
    from rich.console import Console

    console = Console()
    if not console.is_terminal:
        console = Console(width=max(console.width, PIPE_WIDTH))
    return console


def _print_detail(detail: dict[str, Any]) -> None:
    from rich.table import Table

    console = _console()
    run = detail["run"]
    console.print(f"[bold]run {run['uid']}[/bold]  {_status_cell(run, with_reason=False)}")
    for label, value in (
        ("reason", run["reason"] or "—"),
        ("simulated", (run.get("simulation") or "yes") if run.get("simulated") else "no"),
        ("procedure", run["procedure"]),
        ("campaign", run["campaign_uid"] or "—"),
        ("unit", run["unit_key"] or "—"),
        ("started", _utc(run["wall_time"])),
        ("duration", _seconds(run["duration_s"])),
        ("agents", ", ".join(run["agents"]) or "—"),
        ("hilbench", run["hilbench_version"]),
        ("params", json.dumps(run["params"], sort_keys=True, default=str)),
    ):
        console.print(f"  {label:<10} {value}", highlight=False, markup=False)

    phases = Table(title="phases")
    for column in ("Phase", "Status", "Duration", "Reason"):
        phases.add_column(column)
    for phase in detail["phases"]:
        phases.add_row(
            _escape(phase["name"]),
            _status_cell(phase, with_reason=False),
            _seconds(phase["duration_s"]),
            _escape(phase["reason"]),
        )
    console.print(phases)

    counts = detail["event_counts"]
    total = sum(counts.values())
    listed = ", ".join(f"{name} {n}" for name, n in counts.items())
    console.print(f"events: {total}" + (f" ({listed})" if listed else ""), highlight=False)

    samples = Table(title="power samples")
    for column in ("Source", "Unit", "Samples", "Batches", "Span"):
        samples.add_column(column)
    for source in detail["samples"]:
        span = None
        if source["t_first"] is not None and source["t_last"] is not None:
            span = source["t_last"] - source["t_first"]
        samples.add_row(
            _escape(source["source"]),
            source["unit"],
            str(source["n"]),
            str(source["batches"]),
            _seconds(span),
        )
    console.print(samples)

    _print_timing(console, detail.get("timing") or [])

    metrics = Table(title="metrics")
    for column in ("Metric", "Value", "Unit", "Source"):
        metrics.add_column(column)
    for metric in run["metrics"]:
        metrics.add_row(
            _escape(metric["name"]),
            _value_text(metric["value"], metric["uncertainty"]),
            _escape(metric["unit"]),
            _escape(_metric_source(metric)),
        )
    console.print(metrics)


def _metric_source(metric: dict[str, Any]) -> str:
    """Where a power figure comes from (an agent's own report says so), and why a measured
    figure has no uncertainty."""
    from hilbench.power.provenance import NOT_STATED, origin_of

    meta = metric.get("meta") or {}
    origin = origin_of(meta)
    text = origin.explain() if origin is not None else ""
    if metric.get("value") is not None and metric.get("uncertainty") is None and (
            meta.get("uncertainty_note") or (origin is not None and origin.is_agent)):
        text += "" if NOT_STATED in text else f"{'; ' if text else ''}{NOT_STATED}"
    return text


def _print_timing(console: Any, checks: list[dict[str, Any]]) -> None:
    """Each timed request's claim against the orchestrator's window: the bound the link was
    measured to allow, how it was measured, and the margin (for a phase of several timed
    requests, the one with the least margin)."""
    for check in checks:
        allowance = check.get("allowance") or {}
        link = allowance.get("link") or {}
        if "bound_s" in link:
            measured = (f"{link['bound_s'] * 1e3:.3f} ms = {link['quantile'] * 100:g}th "
                        f"percentile {link['quantile_s'] * 1e3:.3f} ms + spread "
                        f"{link['spread_s'] * 1e3:.3f} ms + fastest "
                        f"{link.get('min_s', 0.0) * 1e3:.3f} ms of {link['echoes']} echoes of "
                        f"{link['payload_bytes']} bytes ({link['fresh']} before the phase; "
                        f"median {link['median_s'] * 1e3:.3f} ms, slowest "
                        f"{link['max_s'] * 1e3:.3f} ms)")
        else:
            measured = str(link.get("source", "not measured"))
        lines = [
            ("verdict", str(check.get("verdict", "on_time" if check.get("consistent")
                                      else "inconsistent"))),
            ("window", f"{_ms(check.get('orchestrator_window_s'))} request→reply, claim "
                       f"{_ms(check.get('claimed_s'))}, outside it "
                       f"{_ms(check.get('outside_claim_s'))}"),
            ("allowed", f"{_ms(check.get('allowance_s'))} = link + clock offset ± "
                        f"{_ms(allowance.get('offset_uncertainty_s'))}"
                        + (f" + declared untimed {_ms(allowance.get('untimed_s'))} "
                           f"({allowance.get('untimed')})" if allowance.get("untimed_s") else "")),
            ("link", measured),
            ("margin", f"{_ms(check.get('margin_s'))}" + (
                f" (worst of {check['requests_checked']} requests)"
                if check.get("requests_checked", 1) > 1 else "")),
        ]
        if check.get("reason"):
            lines.append(("reason", str(check["reason"])))
        console.print(f"timing check, phase {check.get('phase') or '?'}", highlight=False,
                      markup=False)
        for label, value in lines:
            console.print(f"  {label:<8} {value}", highlight=False, markup=False)


def _ms(value: Any) -> str:
    return "—" if not isinstance(value, (int, float)) else f"{value * 1e3:.3f} ms"


# -- formatting ------------------------------------------------------------------------------


def _key_params(params: dict[str, Any]) -> str:
    """Scalar parameters as k=v, shortened to fit a table cell."""
    parts = [
        f"{key}={value}"
        for key, value in params.items()
        if isinstance(value, (str, int, float, bool)) or value is None
    ]
    text = " ".join(parts)
    return text if len(text) <= PARAMS_WIDTH else text[: PARAMS_WIDTH - 1] + "…"


def _status_counts(group: RunGroup) -> str:
    parts = []
    for status in STATUSES:
        n = group.statuses.get(status)
        if n:
            style = STATUS_STYLE[status]
            # unverified runs are counted against every run of the row, never averaged
            count = f"{status} {n}/{group.n_runs}" if status == "unverified" else f"{n} {status}"
            parts.append(f"[{style}]{count}[/{style}]")
    if group.simulation and parts:
        # On the first line, so that the word sits beside the group's name.
        parts[0] += " [bold magenta]SIMULATED[/bold magenta]"
    parts.extend(_group_flags(group))
    return "\n".join(parts)


def _group_flags(group: RunGroup) -> list[str]:
    """Overruns and infeasible answers counted beside the statuses, so a figure filed under a
    nominal timeout, or a gap averaged over fewer runs than ran, cannot pass unnoticed."""
    flags = []
    by_name = {m.name: m for m in group.metrics}
    overrun = by_name.get("overrun")
    if overrun is not None and overrun.n and overrun.mean:
        flags.append(f"[bold red]OVERRUN {round(overrun.mean * overrun.n)}/{overrun.n}[/bold red]")
    early = by_name.get("stopped_early")
    if early is not None and early.n and early.mean:
        flags.append(f"STOPPED EARLY {round(early.mean * early.n)}/{early.n}")
    feasible = by_name.get("feasible")
    if feasible is not None and feasible.n and feasible.mean is not None and feasible.mean < 1:
        bad = round((1 - feasible.mean) * feasible.n)
        flags.append(f"[bold red]INFEASIBLE {bad}/{feasible.n}[/bold red]")
    return flags


def _run_flags(run: dict[str, Any]) -> str:
    """The same flags for one run."""
    values = {m["name"]: m["value"] for m in run.get("metrics", ())}
    text = ""
    if values.get("overrun"):
        text += " [bold red]OVERRUN[/bold red]"
    if values.get("stopped_early"):
        text += " STOPPED EARLY"
    if is_set(values.get("feasible")) is False:
        text += " [bold red]INFEASIBLE[/bold red]"
    return text


def _status_cell(item: dict[str, Any], with_reason: bool = True) -> str:
    status = item["status"]
    style = STATUS_STYLE.get(status, "")
    text = f"[{style}]{status}[/{style}]" if style else _escape(status)
    if item.get("simulated"):
        # A simulated figure must not pass for a measured one: the word sits beside the status.
        text += " [bold magenta]SIMULATED[/bold magenta]"
    text += _run_flags(item)
    if with_reason and item.get("reason"):
        text += f"\n{_escape(item['reason'])}"
    return text


def _summary_line(summary: Any) -> str:
    if summary.n == 0:
        return _escape(f"{summary.name}: —")  # stored without a value in every run
    text = f"{summary.name}: {_value_text(summary.mean, summary.std_error)} {summary.unit}"
    return _escape(f"{text.rstrip()} [{summary.n}]")


def _metric_line(metric: dict[str, Any]) -> str:
    text = f"{metric['name']}: {_value_text(metric['value'], metric['uncertainty'])}"
    return _escape(f"{text} {metric['unit']}".rstrip())


def _value_text(value: float | None, uncertainty: float | None) -> str:
    if value is None:
        return "—"
    text = f"{value:.4g}"
    if uncertainty is not None:
        text += f" ± {uncertainty:.2g}"
    return text


def _seconds(value: float | None) -> str:
    return "—" if value is None else f"{value:.3f} s"


def _utc(wall_time: float) -> str:
    return datetime.fromtimestamp(wall_time, tz=timezone.utc).isoformat(timespec="seconds")


def _csv_number(value: float | None) -> str:
    return "" if value is None else repr(value)


def _escape(text: str) -> str:
    from rich.markup import escape

    return escape(text)
