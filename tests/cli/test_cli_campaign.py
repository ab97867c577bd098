"""`hilbench campaign schema|check` and what a person sees for each campaign-file mistake:
the message names file, section and key, the exit code is 2, and nothing was started."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import jsonschema
import pytest
from click.testing import CliRunner

from hilbench.cli import cli
from hilbench.orchestrator.campaign import campaign_schema
from tests import side_envs
from tests.campaign_toml import agent, campaign, qubo
from tests.subprocesses import hilbench

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[2]
GOOD = campaign(agent(), qubo(agent=None), name="t")  # each mistake below edits its text
METER = """
[[instruments]]
id = "dmm"
driver = "keysight34465a"
measures = "cpu0"
simulate = "simulated-cpu"
[instruments.settings]
"""


def _require_interpreters(example: Path, data: dict) -> None:
    """An example may start its agent in a side environment (`python = …`, made by
    scripts/setup-side-envs.sh): in CI it must be there; elsewhere the example is checked where
    it can be."""
    for agent_table in data.get("agents", []):
        python = agent_table.get("python")
        # Relative to the campaign file's folder or the working directory (the repository's).
        if python and not any((base / python).is_file() for base in (example.parent, ROOT)):
            env = "xylo" if "xylo" in python else "loihi"
            side_envs.missing(f"{example.name} needs {python}", env)


# examples/system.toml is the system description template (hilbench leaderboard/report), not a
# campaign: tests/report/test_system.py checks it
CAMPAIGN_EXAMPLES = sorted(p for p in (ROOT / "examples").glob("*.toml") if p.name != "system.toml")


@pytest.mark.slow
@pytest.mark.parametrize("example", CAMPAIGN_EXAMPLES, ids=str)
def test_example_campaigns_pass_check_and_the_json_schema(example):
    data = tomllib.loads(example.read_text())
    jsonschema.validate(data, campaign_schema())
    _require_interpreters(example, data)
    proc = hilbench("campaign", "check", str(example))
    assert proc.returncode == 0, proc.stderr
    assert f"{example}: ok, campaign" in proc.stdout


@pytest.mark.slow
def test_schema_catches_what_an_editor_should_underline():
    schema = json.loads(hilbench("campaign", "schema").stdout)
    jsonschema.Draft202012Validator.check_schema(schema)
    good = tomllib.loads(GOOD)
    jsonschema.validate(good, schema)
    for bad in (
        {**good, "qubo": [{**good["qubo"][0], "nodez": [10]}]},
        {**good, "qubo": [{**good["qubo"][0], "solvers": ["gur obi"]}]},
        {**good, "campaign": {"repetitions": 0}},
        {**good, "agents": [{"id": "cpu0", "driver": "cpu", "spwan": True}]},
    ):
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(bad, schema)


MISTAKES = [
    (
        GOOD.replace("nodes = [10]", "nodez = [10]"),
        "{f} [[qubo]] #1: unknown key 'nodez' (did you mean 'nodes'?)",
    ),
    (
        GOOD.replace("spawn = true", 'address = "127.0.0.1:5555"'),
        "{f} [[agents]] #1 address: '127.0.0.1:5555' is not an endpoint: it needs a transport",
    ),
    (
        GOOD.replace("spawn = true", 'address = "tcp://localhost"'),
        "{f} [[agents]] #1 address: 'tcp://localhost' is not host:port after tcp://",
    ),
    (
        GOOD.replace("spawn = true", 'address = "tcp://host:99999"'),
        "{f} [[agents]] #1 address: 'tcp://host:99999': port 99999 is outside 1…65535",
    ),
    (
        GOOD.replace('driver = "cpu"', 'driver = "cpux"'),
        "{f} [[agents]] #1 driver: no driver named 'cpux' is installed here (installed: ",
    ),
    (
        GOOD.replace("spawn = true", "connects = true"),
        '{f} [[agents]] #1: connects = true needs [campaign] listen = "tcp://…"',
    ),
    (
        GOOD.replace('name = "t"', 'name = "t"\nlisten = "0.0.0.0:5600"').replace(
            "spawn = true", "connects = true"),
        "{f} [campaign] listen: '0.0.0.0:5600' is not an endpoint",
    ),
    (
        GOOD.replace('name = "t"', 'name = "t"\nconnect_timeout_s = 0'),
        "{f} [campaign] connect_timeout_s: 0 must be > 0",
    ),
    (
        GOOD.replace("spawn = true", 'spawn = true\npython = "venvs/loihi/bin/python"'),
        "{f} [[agents]] #1 python: no Python interpreter at 'venvs/loihi/bin/python'",
    ),
    (
        GOOD + METER + "nplcc = 1.0\n",
        "{f} [[instruments]] #1 settings: settings of the Keysight 34465A at the simulated "
        "meter: unknown Keysight 34465A setting(s) nplcc",
    ),
    (
        GOOD + METER.replace("simulated-cpu", "simulated-gpu"),
        "{f} [[instruments]] #1 settings: unknown power model 'simulated-gpu'",
    ),
    (
        GOOD + METER.replace('simulate = "simulated-cpu"',
                             'resource = "TCPIP::h::5025::SOCKET"\ngain_error = 0.03'),
        "{f} [[instruments]] #1 gain_error: only the simulated meter (simulate = ...) takes a "
        "calibration error",
    ),
    (
        GOOD + METER.replace("keysight34465a", "keysight3446"),
        "{f} [[instruments]] #1 settings: no instrument driver named 'keysight3446'",
    ),
    (
        GOOD + "\n[qubo]\nnodes = [1]\n",
        "{f} is not valid TOML: Cannot declare ('qubo',) twice "
        f"(at line {GOOD.count(chr(10)) + 2}, column 6)",  # the [qubo] line after GOOD
    ),
    (
        GOOD.replace("[[qubo]]", "[qubo]"),
        "{f} [qubo]: write each entry as [[qubo]] (array of tables)",
    ),
    (
        GOOD.replace("[[qubo]]", "[[qbuo]]"),
        "{f}: unknown table [[qbuo]]",
    ),
    (
        GOOD.replace('solvers = ["sa"]', 'solvers = "sa"'),
        "{f} [[qubo]] #1 solvers: 'sa' is not a list (write [ … ])",
    ),
    (  # run stopped with exit 2 after the first table's units, each stored once
        GOOD + qubo(seeds=[1]) + qubo(agent=None),
        "{f} [[qubo]] #3: the same table as #1, so each of its units would run twice",
    ),
    (  # any procedure's tables
        GOOD + 2 * ("[[largest_workload]]\ndensities = [1.0]\nsolver = \"sa\"\n"
                    "start_nodes = 8\ntimeout_s = 0.01\ntime_limit_s = 1.0\n"),
        "{f} [[largest_workload]] #2: the same table as #1",
    ),
]


@pytest.mark.slow
@pytest.mark.parametrize(("text", "message"), MISTAKES, ids=lambda v: v[-40:])
def test_each_mistake_is_named_exit_2_and_nothing_starts(tmp_path, text, message):
    path = tmp_path / "t.toml"
    path.write_text(text)
    db = tmp_path / "never.sqlite"
    proc = hilbench("run", str(path), "--db", str(db))
    assert proc.returncode == 2, proc.stderr
    assert "error: " + message.format(f=path) in proc.stderr
    assert "Traceback" not in proc.stderr
    assert not db.exists()  # refused before the store was opened or any process started
    check = CliRunner().invoke(cli, ["campaign", "check", str(path)])
    assert check.exit_code == 2 and message.format(f=path) in check.stderr


def test_every_problem_of_a_file_is_named_at_once(tmp_path):
    path = tmp_path / "t.toml"
    path.write_text(
        GOOD.replace('name = "t"', 'name = "t"\nrepetitions = true')
        .replace("spawn = true", "spawn = true\noptions = {x = [1, 2]}")
        .replace("nodes = [10]", "nodes = [10, 1]")
        .replace('solvers = ["sa"]', 'solvers = ["sa", ""]')
    )
    result = CliRunner().invoke(cli, ["campaign", "check", str(path)])
    assert result.exit_code == 2
    assert result.stderr.splitlines() == [
        f"error: {path} [campaign] repetitions: True is not an integer",
        f"error: {path} [[agents]] #1 options.x: [1, 2] is not a string, an integer, a number "
        "or true or false",
        f"error: {path} [[qubo]] #1 nodes[2]: 1 must be >= 2",
        # a solver is any name the agent's driver declares: the agent refuses others
        f"error: {path} [[qubo]] #1 solvers[2]: '': String should have at least 1 character",
    ]
