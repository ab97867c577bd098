"""README's Loihi host instructions, the Lava lock file, the `loihi` extra and the environment CI
builds all name the same versions."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:
    import tomli as tomllib

REPO = Path(__file__).resolve().parents[3]


def readme_section() -> str:
    """The manual's Loihi host set-up (README's, before the manual moved to docs/)."""
    text = (REPO / "docs/benches/loihi.md").read_text()
    start = text.index("## Loihi host set-up")
    end = text.find("\n## ", start + 1)
    return text[start : end if end != -1 else len(text)]


def readme_versions() -> dict[str, str]:
    section = readme_section()
    found = dict(re.findall(r"\*\*(lava-nc|lava-optimization) ([0-9.]+)\*\*", section))
    found["python"] = re.search(r"\*\*Python ([0-9.]+)\*\*", section).group(1)
    found["numpy"] = re.search(r"\*\*numpy (< ?[0-9]+)\*\*", section).group(1).replace(" ", "")
    return found


def lock_pins() -> dict[str, str]:
    lock = (REPO / "drivers/loihi/requirements-lava.txt").read_text()
    return dict(re.findall(r"^([A-Za-z0-9_.-]+)==(\S+)$", lock, re.M))


def test_readme_names_the_pinned_lava_pair_and_python():
    readme, pins = readme_versions(), lock_pins()
    assert readme["lava-nc"] == pins["lava-nc"] == "0.8.0"
    assert readme["lava-optimization"] == pins["lava-optimization"] == "0.3.0"
    assert readme["numpy"] == "<2" and int(pins["numpy"].split(".")[0]) < 2
    assert readme["python"] == "3.10"


def test_the_loihi_extra_pins_the_same_pair():
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    extra = " ".join(project["optional-dependencies"]["loihi"])
    pins = lock_pins()
    assert f"lava-nc=={pins['lava-nc']}" in extra
    assert f"lava-optimization=={pins['lava-optimization']}" in extra


def test_readme_commands_are_the_ones_ci_runs():
    section, setup = readme_section(), (REPO / "scripts/setup-side-envs.sh").read_text()
    assert "bash scripts/setup-side-envs.sh" in (REPO / ".ci/run").read_text()
    assert "pip install -r drivers/loihi/requirements-lava.txt" in section
    assert "-r drivers/loihi/requirements-lava.txt" in setup
    assert section.index("requirements-lava.txt") < section.index("pip install -e .")


def test_the_lava_environment_has_what_the_readme_says(lava_python):
    script = (
        "import sys, importlib.metadata as m; "
        "print(*sys.version_info[:2], sep='.'); "
        "[print(p, m.version(p)) for p in ('lava-nc', 'lava-optimization', 'numpy')]"
    )
    out = subprocess.run(
        [lava_python, "-c", script], capture_output=True, text=True, check=True
    ).stdout.split("\n")
    installed = dict(line.split() for line in out[1:] if line)
    readme = readme_versions()
    assert out[0] == readme["python"]
    assert installed["lava-nc"] == readme["lava-nc"]
    assert installed["lava-optimization"] == readme["lava-optimization"]
    assert int(installed["numpy"].split(".")[0]) < 2
