"""`hilbench summary CAMPAIGN`: the campaign's tables from a real store file, within 80 columns,
every figure whole, the 5-trial rule applied to QUBO rows too."""

from __future__ import annotations

import json
import os
import pty
import re
import subprocess
import time
from importlib.resources import files
from unittest.mock import ANY

import pytest
from click.testing import CliRunner

from hilbench.cli import EXIT_USAGE, cli
from hilbench.documents import Metric, RunStart, RunStop, new_uid
from hilbench.store import StoreWriter
from hilbench.workloads.asc.report.table6 import ROWS
from tests.report.test_table6 import write_systems
from tests.subprocesses import hilbench, hilbench_command


def _qubo_run(writer, campaign, rep, power, *, seed=0, feasible=True, gap=0.02):
    uid = new_uid()
    params = {"workload": "qubo", "scenario": "fixed_timeout", "nodes": 100, "density": 0.05,
              "seed": seed, "solver": "sa", "timeout_s": 0.1, "repetition": rep,
              "target": -30, "target_source": "published"}
    key = f"qubo/fixed_timeout/n=100/d=0.05/seed={seed}/sa/timeout=0.1/rep={rep}"
    writer(RunStart(uid, campaign, key, "qubo.fixed_timeout", params, {"cpu0": {}}, 1.0,
                    time.time(), "0", simulated=True, simulation="instrument dmm0: simulated"))
    for name, value, unit, u in (
        ("requested_s", 0.1, "s", None), ("actual_s", 0.1004, "s", None),
        ("overrun", 0.0, "", None), ("feasible", float(feasible), "", None),
        ("cost", -29.0 if feasible else 9.0, "", None),
        ("bks_gap", gap if feasible else None, "", None),
        ("avg_power_w", power, "W", 0.05), ("energy_j", power * 0.1004, "J", 0.005),
    ):
        writer(Metric(uid, name, value, unit, u))
    writer(RunStop(uid, 2.0, "success", ""))


@pytest.fixture
def trials_store(tmp_path):
    """Five trials of one QUBO row: one at 60 W, four at 38 W (issue 20's case)."""
    path = tmp_path / "trials.sqlite"
    with StoreWriter(path) as writer:
        writer.begin_campaign("c1", "qubo-trials", {})
        for rep, power in enumerate((60.0, 38.0, 38.0, 38.0, 38.0)):
            _qubo_run(writer, "c1", rep, power)
        writer.end_campaign("c1", "success")
    return path


def _summary(*args):
    return CliRunner().invoke(cli, ["summary", *map(str, args)])


def test_qubo_trials_60_and_38_w_are_flagged(trials_store):
    result = _summary("qubo-trials", "--db", trials_store)
    assert result.exit_code == 0, result.output
    words = " ".join(result.output.split())
    assert "42.400 ± 0.022 [1]" in words  # the mean of the trials, flagged in its cell
    assert "5-trial rule: 5 trial(s) per figure; the reported figure is their mean" in words
    assert "FLAG not repeatable: 100/0.05/0.1/sa, power W: trials 60, 38, 38, 38, 38" in words
    assert all(len(line) <= 80 for line in result.output.splitlines())


def test_new_trials_against_an_earlier_summary(trials_store, tmp_path):
    earlier = tmp_path / "earlier.json"
    result = _summary("qubo-trials", "--db", trials_store, "--format", "json")
    data = json.loads(result.output)
    cell = data["tables"][0]["rows"][0]["cells"]["power W"]
    assert cell["trials"] == [60.0, 38.0, 38.0, 38.0, 38.0] and cell["simulated"] is True
    cell["value"] = 38.0  # as if 38 W had been reported
    earlier.write_text(json.dumps(data))
    result = _summary("qubo-trials", "--db", trials_store, "--reported", earlier)
    words = " ".join(result.output.split())
    assert "FLAG 5-trial rule: 100/0.05/0.1/sa, power W: mean of 5 trial(s) 42.4 is 11.6 % " \
        "from reported 38" in words


def test_infeasible_runs_are_counted_never_averaged(tmp_path):
    path = tmp_path / "s.sqlite"
    with StoreWriter(path) as writer:
        writer.begin_campaign("c2", "mixed", {})
        _qubo_run(writer, "c2", 0, 38.0, seed=0, gap=0.1)
        _qubo_run(writer, "c2", 0, 38.0, seed=1, gap=0.2)
        _qubo_run(writer, "c2", 0, 38.0, seed=2, feasible=False)
        writer.end_campaign("c2", "success")
    rows = json.loads(_summary("mixed", "--db", path, "--format", "json").output)
    cells = rows["tables"][0]["rows"][0]["cells"]
    assert cells["feasible"]["value"] == "2/3"
    assert cells["gap mean"]["value"] == pytest.approx(0.15)


def test_formats_and_errors(trials_store, tmp_path):
    md = _summary("qubo-trials", "--db", trials_store, "--format", "md").output
    assert md.startswith("### qubo-trials: BKS-gap") and "| nodes |" in md
    csv_text = _summary("qubo-trials", "--db", trials_store, "--format", "csv").output
    assert csv_text.splitlines()[0].startswith("table,row,column,value,uncertainty")
    missing = _summary("nope", "--db", trials_store)
    assert missing.exit_code == EXIT_USAGE and "no campaign matching 'nope'" in missing.output
    nostore = _summary("x", "--db", tmp_path / "none.sqlite")
    assert nostore.exit_code == EXIT_USAGE and "no store at" in nostore.output


def _assert_fits(text: str) -> None:
    assert "…" not in text
    for line in text.splitlines():
        assert len(line) <= 80, line


def _in_terminal(args: list[str], columns: int = 80) -> str:
    """Run a command on a pseudo-terminal ``columns`` wide, as a person's terminal."""
    import fcntl
    import struct
    import termios

    main, child = pty.openpty()
    fcntl.ioctl(child, termios.TIOCSWINSZ, struct.pack("HHHH", 50, columns, 0, 0))
    env = {**os.environ, "COLUMNS": str(columns), "TERM": "dumb"}
    proc = subprocess.Popen(args, stdout=child, stderr=subprocess.DEVNULL, env=env)
    os.close(child)
    chunks = []
    while True:
        try:
            data = os.read(main, 65536)
        except OSError:
            break
        if not data:
            break
        chunks.append(data)
    proc.wait(timeout=60)
    os.close(main)
    return b"".join(chunks).decode().replace("\r\n", "\n")


@pytest.mark.timeout(600)
@pytest.mark.slow
def test_the_demos_summary_fits_80_columns_in_a_terminal_and_in_a_file(tmp_path):
    """The demo's campaign file (`hilbench demo` runs it through the same `run` path) with two of
    its five seeds and without its 1 s timeout: every column of its table, every size, solver
    and width of cell, each cell a mean over seeds, in about a seventh of the demo's time (the
    whole demo runs in README's first command). The 1 s rows print as the others do (0.001 sets
    the timeout column's width) and took 30 s of the 47 this test took with them."""
    demo_file = files("hilbench.campaigns").joinpath("demo.toml").read_text()
    toml, n = re.subn(r"^seeds = \[0, 1, 2, 3, 4\]", "seeds = [0, 1]", demo_file, flags=re.M)
    assert n == 1  # the demo still runs the paper's five seeds
    toml, n = re.subn(r"^timeouts_s = \[0.001, 0.01, 0.1, 1.0\]", "timeouts_s = [0.001, 0.01, 0.1]",
                      toml, flags=re.M)
    assert n == 1  # and its four timeouts
    path = tmp_path / "demo.toml"
    path.write_text(toml)
    db = tmp_path / "demo.sqlite"
    demo = hilbench("run", path, "--db", db, "-q", timeout=300)
    assert demo.returncode in (0, 1), demo.stderr
    table_start = demo.stdout.index("qubo-cpu: BKS-gap")
    _assert_fits(demo.stdout[table_start:demo.stdout.rindex("\ncampaign ")])  # end of the run
    in_file = hilbench("summary", "qubo-cpu", "--db", db)
    assert in_file.returncode == 0, in_file.stderr
    _assert_fits(in_file.stdout)
    assert "(simulated)" in in_file.stdout and "n/m [" in in_file.stdout
    on_screen = _in_terminal(hilbench_command("summary", "qubo-cpu", "--db", db))
    _assert_fits(on_screen)
    assert on_screen.split() == in_file.stdout.split()


def test_an_asc_campaign_prints_the_reports_table_6_within_80_columns(tmp_path):
    """`summary` on an ASC campaign: Table 6's rows in the report's order, fixed ms / mW / mJ
    (the report's cells: tests/report/test_table6.py pins the same figures in its HTML), then
    the system's detail table; every line within 80 columns, every figure whole."""
    store = write_systems(tmp_path / "asc.sqlite")  # an ASC campaign per system
    proc = hilbench("summary", "xylo-like", "--db", store)  # a file, not a terminal: 80
    assert proc.returncode == 0, proc.stderr
    _assert_fits(proc.stdout)
    block = proc.stdout[proc.stdout.index("ASC: NeuroBench Table 6 layout"):
                        proc.stdout.index("xylo-like: ASC on dev0 in detail")]
    grid = block[:block.index("\n  [1]")].splitlines()
    assert grid[2].split() == ["metric", "xylo-like"]  # a column per system
    printed = [re.split(r"\s{2,}", line.strip()) for line in grid[4:] if line[0] != "─"]
    expected = []
    for group, label, _, _ in ROWS:
        if group and [group] not in expected:
            expected.append([group])  # a group's heading, alone on its line
        expected.append([label, ANY])
    assert printed == expected
    figures = {f"{group}: {label}": cells[1] for (group, label, _, _), cells
               in zip(ROWS, (p for p in printed if len(p) == 2), strict=True)}
    assert figures["execution time (ms, mean ± s.e.): inference"] == "0.4100 ± 0.0014 ms"
    assert figures[": idle power (mW, mean ± s.u.)"] == "0.21600 ± 0.00054 mW [2]"
    assert figures["dynamic energy per inference (mJ, mean ± s.u.): inference"] == (
        "0.00001000 ± 0.00000020 mJ [2]")
    assert not any(u in block for u in ("µs", "µW", "µJ", "nJ"))  # never re-scaled
    assert "200.00 ± 0.67 µs" in proc.stdout  # the detail table below keeps its own units
