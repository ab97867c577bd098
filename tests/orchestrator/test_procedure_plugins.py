"""Procedures are plugins: the orchestrator knows none by name, and a third party adds a
workload with an entry point only (here a real distribution on a temporary sys.path entry)."""

from __future__ import annotations

import ast
import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from hilbench.contracts.registry import workloads
from hilbench.orchestrator.procedure import ENTRY_POINT_GROUP, procedures
from hilbench.store import Store
from tests.campaign_toml import agent, campaign, table
from tests.subprocesses import hilbench, unit_runs

ROOT = Path(__file__).resolve().parents[2]
ORCHESTRATOR = ROOT / "hilbench" / "orchestrator"
WORKLOAD_WORDS = re.compile(r"\b(qubo|asc|mis|maxcut)\b", re.IGNORECASE)


def _docstrings(tree: ast.AST) -> set[int]:
    ids = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                ids.add(id(body[0].value))
    return ids


@pytest.mark.parametrize("path", sorted(ORCHESTRATOR.glob("*.py")), ids=lambda p: p.name)
def test_orchestrator_imports_no_procedure_and_names_no_workload(path):
    tree = ast.parse(path.read_text(), str(path))
    docs = _docstrings(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import | ast.ImportFrom):
            names = [a.name for a in node.names]
            modules = [node.module or ""] if isinstance(node, ast.ImportFrom) else names
            for module in modules:
                assert not module.startswith(("hilbench.procedures", "hilbench.workloads")), (
                    f"{path.name}:{node.lineno} imports {module}"
                )
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            if id(node) in docs:
                continue
            assert not WORKLOAD_WORDS.search(node.value), (
                f"{path.name}:{node.lineno} names a workload in {node.value!r}"
            )
        elif isinstance(node, ast.Name | ast.Attribute):
            name = node.id if isinstance(node, ast.Name) else node.attr
            assert not WORKLOAD_WORDS.search(name.replace("_", " ")), (
                f"{path.name}:{node.lineno} names a workload: {name}"
            )


def test_running_a_campaign_loads_no_procedure_until_the_registry_asks():
    code = textwrap.dedent(
        """
        import sys
        import hilbench.orchestrator.campaign, hilbench.orchestrator.runner
        import hilbench.cli.run, hilbench.cli.campaign
        loaded = sorted(m for m in sys.modules if m.startswith(("hilbench.procedures",
                                                                  "hilbench.workloads")))
        print(loaded)
        """
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    loaded = set(ast.literal_eval(out.stdout.strip()))
    # The registry reads each workload's descriptor (its plugin module and the wire contract
    # it names, which the capabilities and the agent's checks are built from), and nothing
    # else of it: its procedures, tables and figures load when a campaign's table asks for them.
    descriptors = {f"hilbench.workloads.{w}.{part}" for w in workloads()
                   for part in ("plugin", "contract")}
    packages = {"hilbench.workloads", "hilbench.workloads.lazy",
                *(m.rpartition(".")[0] for m in descriptors)}
    assert loaded <= descriptors | packages, sorted(loaded - descriptors - packages)


def test_shipped_procedures_are_entry_points():
    registry = procedures()
    assert {"qubo", "asc"} <= set(registry)
    for name, plugin in registry.items():
        assert plugin.table.model_json_schema()["type"] == "object", name


# --- a third-party workload -----------------------------------------------------------------

PLUGIN = '''
"""A workload hilbench has never heard of: count the letters of words on the agent."""

from pydantic import Field

from hilbench.documents import Metric
from hilbench.orchestrator.procedure import CampaignTable, Procedure


class WordsTable(CampaignTable):
    words: list[str] = Field(min_length=1, description="words to echo through the agent")


class WordsUnit:
    uses_instruments = True

    def __init__(self, agent, word, rep):
        self.agent, self.word, self.rep = agent, word, rep

    @property
    def key(self):
        return f"words/{self.word}/rep={self.rep}"

    @property
    def procedure(self):
        return "words.echo"

    def params(self):
        return {"workload": "words", "word": self.word}

    def prepare(self):
        return {}

    def run(self, ctx, device, instruments):
        with ctx.phase("echo", [device], instruments):
            reply = device.link.request("echo", {"word": self.word}, timeout_s=10)
        ctx.emit(Metric(ctx.run_uid, "letters", float(len(reply.body["word"])), "1"))


def expand(tables, campaign):
    return [WordsUnit(t.agent, w, r) for t in tables for r in range(campaign.repetitions)
            for w in t.words]


PROCEDURE = Procedure(table=WordsTable, expand=expand, summary="echo words (third-party test)")
'''


def install(site: Path, entry_points: str) -> dict[str, str]:
    """A distribution `hilbench-words` on a PYTHONPATH entry: the environment to run with."""
    info = site / "hilbench_words-0.1.dist-info"
    info.mkdir(parents=True)
    (site / "hilbench_words.py").write_text(PLUGIN)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: hilbench-words\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(f"[{ENTRY_POINT_GROUP}]\n{entry_points}")
    path = os.pathsep.join(filter(None, [str(site), os.environ.get("PYTHONPATH")]))
    return {**os.environ, "PYTHONPATH": path}


@pytest.fixture
def third_party(tmp_path) -> dict[str, str]:
    """The plugin registered by an entry point only."""
    return install(tmp_path / "site", "words = hilbench_words:PROCEDURE\n")


CAMPAIGN = campaign(
    agent(), table("[[words]]", words=["neuro", "bench"]), name="words", repetitions=2
)


@pytest.mark.slow
def test_third_party_procedure_runs_through_a_real_agent(tmp_path, third_party):
    path = tmp_path / "words.toml"
    path.write_text(CAMPAIGN)
    check = hilbench("campaign", "check", str(path), env=third_party)
    assert check.returncode == 0, check.stderr
    assert "4 run(s) (words.echo 4)" in check.stdout
    db = tmp_path / "w.sqlite"
    run = hilbench("run", str(path), "--db", str(db), "-q", env=third_party)
    assert run.returncode == 0, run.stderr
    with Store(db) as store:
        runs = unit_runs(store)
        assert sorted(r["unit_key"] for r in runs) == sorted(
            f"words/{w}/rep={r}" for w in ("neuro", "bench") for r in (0, 1)
        )
        letters = {m["value"] for r in runs for m in store.metrics(r["uid"])}
    assert letters == {5.0}


@pytest.mark.slow
def test_third_party_table_is_in_the_schema_and_checked(tmp_path, third_party):
    schema = json.loads(hilbench("campaign", "schema", env=third_party).stdout)
    assert "words" in schema["properties"] and "qubo" in schema["properties"]
    path = tmp_path / "typo.toml"
    path.write_text(CAMPAIGN.replace("words = [", "wordz = ["))
    proc = hilbench("campaign", "check", str(path), env=third_party)
    assert proc.returncode == 2
    assert f"error: {path} [[words]] #1: unknown key 'wordz' (did you mean 'words'?)" in (
        proc.stderr
    )


def test_without_the_plugin_its_table_is_an_unknown_table(tmp_path):
    path = tmp_path / "words.toml"
    path.write_text(CAMPAIGN)
    proc = hilbench("campaign", "check", str(path), env=dict(os.environ))
    assert proc.returncode == 2
    assert f"error: {path}: unknown table [[words]]" in proc.stderr


@pytest.mark.slow
def test_a_broken_plugin_is_named_and_harms_only_campaigns_that_use_it(tmp_path):
    env = install(tmp_path / "site", "words = hilbench_words:PROCEDURE\n"
                  "broken = hilbench_not_installed:PROCEDURE\n")
    path = tmp_path / "words.toml"
    path.write_text(CAMPAIGN)
    assert hilbench("campaign", "check", str(path), env=env).returncode == 0
    path.write_text(CAMPAIGN + "\n[[broken]]\nx = 1\n")
    proc = hilbench("campaign", "check", str(path), env=env)
    assert proc.returncode == 2
    assert (f"error: {path} [[broken]]: procedure 'broken' (hilbench_not_installed:PROCEDURE) "
            "could not be loaded: ModuleNotFoundError") in proc.stderr
    schema = hilbench("campaign", "schema", env=env)
    assert schema.returncode == 2 and "procedure 'broken'" in schema.stderr
    assert "Traceback" not in proc.stderr + schema.stderr
