"""`hilbench results`: read stored runs back as a table, CSV or one JSON document.

CSV is long (one row per run and metric) so it loads into any tool without knowing the metric
names; JSON carries everything the table shows, with full uids and unrounded numbers.
"""

from __future__ import annotations

import csv
import json
import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import click

from hilbench.cli import EXIT_USAGE
from hilbench.store import Store, StoreError, default_db_path

SHORT_UID = 8
PARAMS_WIDTH = 48
PIPE_WIDTH = 160
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
STATUS_STYLE = {"success": "green", "fail": "red", "abort": "yellow", "incomplete": "magenta"}


@click.command()
@click.option(
    "--db",
    "db_path",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Store file [default: $HILBENCH_DB, else ./hilbench.sqlite].",
)
@click.option("--run", "run_id", default=None, help="Show one run in detail (a unique uid prefix).")
@click.option("--campaign", "campaign_id", default=None, help="Only runs of this campaign.")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["table", "csv", "json"]),
    default="table",
    show_default=True,
    help="table for people, csv or json for tools (written to stdout).",
)
def results(db_path: Path | None, run_id: str | None, campaign_id: str | None, fmt: str) -> None:
    """Show stored runs: procedure, key parameters, status and metrics (value ± uncertainty)."""
    path = db_path if db_path is not None else default_db_path()
    try:
        with Store(path) as store:
            if run_id is not None:
                detail = _run_detail(store, store.find_run(run_id)["uid"])
                _show_detail(detail, fmt)
            else:
                campaign_uid = store.resolve_campaign_uid(campaign_id) if campaign_id else None
                runs = _run_summaries(store, campaign_uid)
                _show_runs(runs, fmt, path)
    except StoreError as exc:
        click.echo(f"error: {exc}", err=True)
        raise SystemExit(EXIT_USAGE) from None


# -- gathering -------------------------------------------------------------------------------


def _run_summaries(store: Store, campaign_uid: str | None) -> list[dict[str, Any]]:
    by_run: dict[str, list[dict[str, Any]]] = {}
    for metric in store.metrics():
        by_run.setdefault(metric["run_uid"], []).append(_metric_view(metric))
    runs = store.runs(campaign_uid)
    for run in runs:
        run["metrics"] = by_run.get(run["uid"], [])
    return runs


def _run_detail(store: Store, run_uid: str) -> dict[str, Any]:
    run = store.run(run_uid)
    run["metrics"] = [_metric_view(m) for m in store.metrics(run_uid)]
    return {
        "run": run,
        "phases": store.phases(run_uid),
        "event_counts": store.event_counts(run_uid),
        "samples": store.sample_sources(run_uid),
    }


def _metric_view(metric: dict[str, Any]) -> dict[str, Any]:
    return {k: metric[k] for k in ("name", "value", "uncertainty", "unit", "meta")}


# -- output ----------------------------------------------------------------------------------


def _show_runs(runs: list[dict[str, Any]], fmt: str, path: Path) -> None:
    if fmt == "json":
        _echo_json({"db": str(path), "runs": runs})
    elif fmt == "csv":
        _write_csv(runs)
    elif not runs:
        click.echo(f"no runs in {path}")
    else:
        _print_runs_table(runs)


def _show_detail(detail: dict[str, Any], fmt: str) -> None:
    if fmt == "json":
        _echo_json(detail)
    elif fmt == "csv":
        _write_csv([detail["run"]])
    else:
        _print_detail(detail)


def _echo_json(document: dict[str, Any]) -> None:
    click.echo(json.dumps(document, indent=2, default=str))


def _write_csv(runs: list[dict[str, Any]]) -> None:
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


def _print_runs_table(runs: list[dict[str, Any]]) -> None:
    from rich.table import Table

    table = Table(title=f"{len(runs)} run(s)")
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
    _console().print(table)


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

    metrics = Table(title="metrics")
    for column in ("Metric", "Value", "Unit"):
        metrics.add_column(column)
    for metric in run["metrics"]:
        metrics.add_row(
            _escape(metric["name"]),
            _value_text(metric["value"], metric["uncertainty"]),
            _escape(metric["unit"]),
        )
    console.print(metrics)


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


def _status_cell(item: dict[str, Any], with_reason: bool = True) -> str:
    status = item["status"]
    style = STATUS_STYLE.get(status, "")
    text = f"[{style}]{status}[/{style}]" if style else _escape(status)
    if item.get("simulated"):
        # A simulated figure must not pass for a measured one: the word sits beside the status.
        text += " [bold magenta]SIMULATED[/bold magenta]"
    if with_reason and item.get("reason"):
        text += f"\n{_escape(item['reason'])}"
    return text


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
