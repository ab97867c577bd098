"""Workload procedures (the core's and the example plugin's) reach the orchestrator only
through the procedure SDK (hilbench.sdk): its insides may change without touching them."""

from __future__ import annotations

import ast
from pathlib import Path

import hilbench.sdk as sdk

ROOT = Path(__file__).resolve().parents[2]
PROCEDURE_SOURCES = [*(ROOT / "hilbench" / "workloads").glob("*/procedures/*.py"),
                     *(ROOT / "examples" / "plugins" / "maxcut" / "hilbench_maxcut").glob("*.py")]


def _orchestrator_imports(path: Path) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text())):  # TYPE_CHECKING and function bodies too
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(
                "hilbench.orchestrator"):
            found.append(f"{path.name}: {node.module}")
        elif isinstance(node, ast.Import):
            found += [f"{path.name}: {a.name}" for a in node.names
                      if a.name.startswith("hilbench.orchestrator")]
    return found


def test_procedures_import_the_orchestrator_only_through_the_sdk():
    assert len(PROCEDURE_SOURCES) > 20
    assert [hit for path in PROCEDURE_SOURCES for hit in _orchestrator_imports(path)] == []


def test_the_sdk_exports_what_it_lists():
    missing = [name for name in sdk.__all__ if not hasattr(sdk, name)]
    assert missing == []
