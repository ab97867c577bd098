"""The floors of hilbench/ hold: a module imports only from its own floor or the floors below
(every import that runs counts, those inside functions too; tests/import_graph.py reads them),
and the core imports no driver — drivers, instruments and their commands join through entry
points (DESIGN.md, "Floors that hold").

Same-floor imports between packages are allowed here; the import-circle test keeps them from
going round."""

from __future__ import annotations

import ast

from tests.import_graph import ROOT, graph, modules

# Lowest first. A module belongs to the longest name listed here that it is, or lies inside.
FLOORS: list[tuple[str, set[str]]] = [
    ("base: small helpers with no hilbench import of their own but these",
     {"hilbench", "hilbench.clock", "hilbench.loglimit", "hilbench.private_files",
      "hilbench.safe_paths", "hilbench.bounded_parse", "hilbench.confined_read",
      "hilbench.filehash", "hilbench.lifeline", "hilbench.documents", "hilbench.simulation"}),
    ("wire and contracts: codec, sockets, keys, typed messages",
     {"hilbench.wire", "hilbench.contracts"}),
    ("store, power arithmetic, workloads' pure parts, models",
     {"hilbench.store", "hilbench.power", "hilbench.workloads", "hilbench.nir",
      "hilbench.complexity"}),
    ("agent runtime and simulated devices (which are drivers of the agent)",
     {"hilbench.agent", "hilbench.sim",
      # ASC sample lists: the agent side of a workload (its plugin names it)
      "hilbench.workloads.asc.agent_samples"}),
    ("orchestrator", {"hilbench.orchestrator"}),
    ("procedure SDK", {"hilbench.sdk"}),
    ("workload procedures",
     {"hilbench.workloads.qubo.procedures", "hilbench.workloads.asc.procedures"}),
    ("daemon, cassette, report",
     {"hilbench.daemon", "hilbench.cassette", "hilbench.report",
      "hilbench.workloads.qubo.report", "hilbench.workloads.asc.report"}),
    ("commands, benchmarks, testing kit",
     {"hilbench.cli", "hilbench.bench", "hilbench.testing", "hilbench.launch",
      "hilbench.__main__", "hilbench.campaigns",
      # each workload's driver conformance cases, run by hilbench.testing.driver_conformance
      "hilbench.workloads.qubo.conformance", "hilbench.workloads.asc.conformance",
      # each workload's commands (the hilbench.commands entry-point group)
      "hilbench.workloads.qubo.cli", "hilbench.workloads.qubo.cli_targets",
      "hilbench.workloads.asc.cli", "hilbench.workloads.asc.cli_train",
      # and benchmarks (the hilbench.benchmarks entry-point group)
      "hilbench.workloads.qubo.bench_cpu", "hilbench.workloads.qubo.bench_generator",
      "hilbench.workloads.asc.bench_harness"}),
]

# Arrows up that another part of issue 32 owns, with its owner; the lead removes an entry once
# that part is merged (the test fails when a listed arrow is gone, so none stays stale).
KNOWN_ARROWS_UP: dict[tuple[str, str], str] = {
    # Reanalysis reads recorded runs through the cassette layer (workloads as plugins).
    ("hilbench.workloads.asc.procedures.reanalysis", "hilbench.cassette.runs"): "plugins",
    ("hilbench.workloads.qubo.procedures.reanalysis", "hilbench.cassette.runs"): "plugins",
}



def floor_of(module: str) -> int:
    """The index in FLOORS of ``module``'s floor; ValueError for a module placed nowhere."""
    name = module
    while name:
        for level, (_, members) in enumerate(FLOORS):
            if name in members:
                return level
        name = name.rpartition(".")[0]
    raise ValueError(f"{module} is on no floor: add its package to FLOORS")


def arrows_up() -> set[tuple[str, str]]:
    return {(source, target) for source, targets in graph().items() for target in targets
            if floor_of(target) > floor_of(source)}


def test_every_module_has_a_floor():
    unplaced = []
    for module in modules():
        try:
            floor_of(module)
        except ValueError:
            unplaced.append(module)
    assert unplaced == []


def test_no_arrow_up_but_the_listed_ones():
    found = arrows_up()
    unexpected = sorted(found - KNOWN_ARROWS_UP.keys())
    assert unexpected == [], "imports from a higher floor:\n" + "\n".join(
        f"  {a} (floor {floor_of(a)}) -> {b} (floor {floor_of(b)})" for a, b in unexpected)
    stale = sorted(KNOWN_ARROWS_UP.keys() - found)
    assert stale == [], f"listed arrows up that no longer exist (remove them): {stale}"


def test_the_check_sees_an_arrow_up():
    assert floor_of("hilbench.wire.codec") < floor_of("hilbench.orchestrator.client")
    assert floor_of("hilbench.cli.run") == floor_of("hilbench.bench.soak")
    assert floor_of("hilbench.store.schema") > floor_of("hilbench.contracts.base")


def _driver_references(path) -> list[str]:
    """Imports of ``hilbench_drivers`` and strings that name one of its modules (an entry
    point, an ``importlib.import_module`` argument) in the file at ``path``; docstrings and
    comments may mention a driver."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                  if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef
                                | ast.AsyncFunctionDef)
                  and node.body and isinstance(node.body[0], ast.Expr)
                  and isinstance(node.body[0].value, ast.Constant)}
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [a.name for a in node.names if a.name.split(".")[0] == "hilbench_drivers"]
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == \
                "hilbench_drivers":
            found.append(node.module)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and \
                id(node) not in docstrings and "hilbench_drivers" in node.value:
            found.append(repr(node.value))
    return [f"{path.name}: {ref}" if not path.is_relative_to(ROOT) else
            f"{path.relative_to(ROOT)}: {ref}" for ref in found]


def test_the_core_imports_no_driver():
    found = [ref for path in modules().values() for ref in _driver_references(path)]
    assert found == [], "hilbench/ names hilbench_drivers (drivers join by entry point):\n" + \
        "\n".join(found)


def test_the_driver_check_sees_imports_and_entry_point_strings(tmp_path):
    sample = tmp_path / "sample.py"
    sample.write_text('"""Mentions hilbench_drivers.xylo in a docstring: fine."""\n'
                      "def f():\n    from hilbench_drivers.xylo import network\n"
                      "COMMANDS = {'x': 'hilbench_drivers.arduino.cli:arduino'}\n")
    found = _driver_references(sample)
    assert len(found) == 2
    assert any("hilbench_drivers.xylo" in f for f in found)
    assert any("arduino.cli:arduino" in f for f in found)


# Names that moved down a floor (issue 32), with the module that defines them.
MOVED_DOWN = {
    "AgentError": "hilbench.wire.link", "ClockOffset": "hilbench.wire.link",
    "LinkBound": "hilbench.wire.link_probe", "Echo": "hilbench.wire.link_probe",
    "EchoPool": "hilbench.wire.link_probe", "InstrumentFault": "hilbench.power.source",
    "to_watts": "hilbench.power.timing", "timing_uncertainty_s": "hilbench.power.timing",
    "drift_residual_s": "hilbench.power.timing", "aperture_s": "hilbench.power.timing",
    "instrument_class": "hilbench.power.registry",
}


def test_moved_names_are_imported_from_where_they_live():
    """No module reaches a moved name through its old home: one name, one place, so the old
    homes hold no re-exports to drift (hilbench.orchestrator.link_probe and
    hilbench.cassette.tap are gone)."""
    wrong = []
    for path in [*ROOT.joinpath("hilbench").rglob("*.py"), *ROOT.joinpath("tests").rglob("*.py")]:
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if not isinstance(node, ast.ImportFrom) or not node.module:
                continue
            for alias in node.names:
                home = MOVED_DOWN.get(alias.name)
                if home is not None and node.module.startswith("hilbench") \
                        and node.module != home:
                    wrong.append(f"{path.relative_to(ROOT)}:{node.lineno} imports "
                                 f"{alias.name} from {node.module}, not {home}")
    assert not wrong, "\n".join(wrong)
