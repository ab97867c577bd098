"""Workloads are plugins: no module of the core (hilbench/ outside hilbench/workloads/) names a
workload in its code, the registry-driven parts not even in their prose, and nothing under
hilbench/ names the example plugin (examples/plugins/maxcut) or its entry points — it joins
through the ``hilbench.workloads`` and ``hilbench.drivers`` groups alone."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import tomllib

ROOT = Path(__file__).resolve().parents[2]
CORE = ROOT / "hilbench"

# The modules the registry drives: the agent's dispatcher, the contract tables and
# capabilities, the protocol spec generator, the procedure loader, the summary, the report's
# figures, workflow, sections and templates, the leaderboard, the results and summary commands,
# the daemon and store benchmarks' campaign.
REGISTRY_DRIVEN = (
    "agent/dispatch.py",
    "contracts/registry.py",
    "contracts/capabilities.py",
    "contracts/messages.py",
    "contracts/spec.py",
    "orchestrator/procedure.py",
    "report/summary.py",
    "report/workflow.py",
    "report/figures/source.py",
    "cli/summary.py",
    "cli/results.py",
    "sdk/__init__.py",
    "sdk/power.py",
    # the daemon and store benchmarks: their campaign is the first workload's bench fixture
    "bench/bench_campaign.py",
    # the leaderboard: each workload's rows and columns (WorkloadPlugin.leaderboard)
    "report/leaderboard.py",
    # the report: each workload's own section (WorkloadPlugin.report_section)
    "report/document.py",
    "report/sections.py",
    "report/templates/report.html.j2",
    "report/templates/report.md.j2",
)
WORKLOAD_NAME = re.compile(r"\b(qubo|asc|maxcut|largest_workload)\b", re.IGNORECASE)
# In code a name may be part of an identifier (``qubo_file``, ``asc_groups``).
NAME_IN_CODE = re.compile(r"(?<![A-Za-z0-9])(qubo|asc|maxcut|largest_workload)(?![A-Za-z0-9])",
                          re.IGNORECASE)
SQL_ORDER = {"ASC", "DESC"}  # ORDER BY's keyword, not the workload


def _names_in_code(source: str) -> Iterator[tuple[int, str]]:
    """(line, text) of every identifier, imported module and string in ``source`` but its
    docstrings: prose and comments may mention a workload as an example, code may not."""
    tree = ast.parse(source)
    docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                  if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef
                                | ast.AsyncFunctionDef)
                  and node.body and isinstance(node.body[0], ast.Expr)
                  and isinstance(node.body[0].value, ast.Constant)}
    for node in ast.walk(tree):
        line = getattr(node, "lineno", 0)
        if isinstance(node, ast.Name):
            yield line, node.id
        elif isinstance(node, ast.Attribute):
            yield line, node.attr
        elif isinstance(node, ast.alias):
            yield line, node.name
        elif isinstance(node, ast.ImportFrom):
            yield line, node.module or ""
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            yield line, node.name
        elif isinstance(node, ast.arg | ast.keyword) and node.arg:
            yield line, node.arg
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and \
                id(node) not in docstrings and node.value not in SQL_ORDER:
            yield line, node.value


def _core_modules() -> list[str]:
    return sorted(str(path.relative_to(CORE)) for path in CORE.rglob("*.py")
                  if not path.is_relative_to(CORE / "workloads"))


def _naming_a_workload(path: str) -> list[str]:
    return [f"{path}:{line}: {text[:60]!r}" for line, text in
            _names_in_code((CORE / path).read_text(encoding="utf-8"))
            if NAME_IN_CODE.search(text)]


def test_no_core_module_names_a_workload_in_its_code():
    modules = _core_modules()
    assert len(modules) > 200  # every module found, not a list that could go stale
    found = [hit for path in modules for hit in _naming_a_workload(path)]
    assert found == []


def test_the_check_sees_a_workload_named_in_code():
    source = (
        '"""QUBO in the module docstring."""\n'
        "# qubo in a comment\n"
        "from hilbench.workloads.asc.contract import STAGES\n"
        "qubo_file = 'x'\n"
        "order = 'ASC'\n"
        "def f(asc=1):\n"
        "    '''asc in a docstring'''\n"
        "    return {'workload': 'qubo'}\n")
    hits = sorted(text for _, text in _names_in_code(source) if NAME_IN_CODE.search(text))
    assert hits == ["asc", "hilbench.workloads.asc.contract", "qubo", "qubo_file"]


def test_the_registry_driven_modules_name_no_workload():
    named = {path: sorted({m.group(0).lower() for m in WORKLOAD_NAME.finditer(
        (CORE / path).read_text())}) for path in REGISTRY_DRIVEN}
    assert {path: names for path, names in named.items() if names} == {}


def test_nothing_under_hilbench_names_the_example_plugin():
    pyproject = tomllib.loads(
        (ROOT / "examples" / "plugins" / "maxcut" / "pyproject.toml").read_text())
    groups = pyproject["project"]["entry-points"]
    entry_points = {name for group in groups.values() for name in group}
    assert entry_points == {"maxcut", "maxcut-cpu"}
    names = [*entry_points, "hilbench_maxcut", "hilbench-maxcut"]
    pattern = re.compile("|".join(re.escape(n) for n in names), re.IGNORECASE)
    found = [str(path.relative_to(ROOT)) for path in CORE.rglob("*")
             if path.is_file() and path.suffix not in (".pyc", ".npz", ".png")
             and pattern.search(path.read_text(errors="replace"))]
    assert found == []


def test_the_workloads_commands_join_through_the_entry_point_group():
    from hilbench.cli import SUBCOMMANDS
    from hilbench.cli.lazy import COMMANDS_GROUP, plugin_commands

    assert not {"qubo", "asc"} & set(SUBCOMMANDS)
    assert {"qubo", "asc"} <= set(plugin_commands(COMMANDS_GROUP))
