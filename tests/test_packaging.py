"""The distribution ships every package, and the core stays light."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[1]


def _listed_packages() -> set[str]:
    data = tomllib.loads((ROOT / "pyproject.toml").read_text())
    return set(data["tool"]["setuptools"]["packages"])


def _packages_on_disk() -> set[str]:
    found = set()
    for top, name in (("hilbench", "hilbench"), ("drivers", "hilbench_drivers")):
        for init in (ROOT / top).rglob("__init__.py"):
            rel = init.parent.relative_to(ROOT / top)
            found.add(".".join([name, *rel.parts]))
    return found


def test_every_package_is_listed_in_pyproject():
    missing = _packages_on_disk() - _listed_packages()
    assert not missing, f"add these to [tool.setuptools] packages in pyproject.toml: {missing}"


@pytest.mark.slow
def test_core_imports_without_vendor_sdks():
    blocked = ["rockpool", "lava", "pyvisa", "serial", "cobs", "samna", "torch", "dwave"]
    code = (
        "import sys\n"
        f"for name in {blocked!r}:\n"
        "    sys.modules[name] = None\n"
        "import hilbench.cli, hilbench.orchestrator.runner, hilbench.agent.runtime\n"
        "import hilbench.store, hilbench.workloads.qubo, hilbench_drivers.cpu\n"
        "from hilbench.cli import cli\n"
        "from click.testing import CliRunner\n"
        "assert CliRunner().invoke(cli, ['--help']).exit_code == 0\n"
        "# every command's help too: a driver's commands import its SDK only when they run\n"
        "for name in cli.list_commands(None):\n"
        "    result = CliRunner().invoke(cli, [name, '--help'])\n"
        "    assert result.exit_code == 0, (name, result.output, result.exception)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


def test_cpu_driver_is_found_by_entry_point():
    from hilbench.agent.driver import available_drivers

    assert available_drivers()["cpu"] == "hilbench_drivers.cpu:CpuDriver"


def test_all_extra_pulls_no_gpu_stack():
    """`pip install '.[all,test]'` must not bring torch (from PyPI alone: the CUDA build)."""
    data = tomllib.loads((ROOT / "pyproject.toml").read_text())
    extras = data["project"]["optional-dependencies"]
    for extra in ("all", "test", "nir"):  # nir: the closed category runs without torch
        names = [req.split("[")[0].split("=")[0].split(">")[0].split("<")[0].strip().lower()
                 for req in extras[extra]]
        assert not {"torch", "triton"} & set(names), extra
        assert not any(n.startswith("nvidia") for n in names), extra
    assert any(req.startswith("torch") for req in extras["train"])


def test_the_packaged_asc_model_ships_and_loads_without_torch():
    code = (
        "import sys\n"
        "sys.modules['torch'] = None\n"
        "from hilbench.workloads.asc import packaged_model_path\n"
        "from hilbench.workloads.asc.quant import QuantisedModel\n"
        "m = QuantisedModel.load(packaged_model_path())\n"
        "assert m.mfe_config.sample_rate == 16000 and len(m.classes) == 4, m.classes\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
