"""The manual builds (`mkdocs build --strict`, as .ci/run does), its generated references cover
every command and campaign table, and README stays a front page that holds the two commands."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SETUP_AND_DEMO = (
    "python3 -m venv .venv && .venv/bin/pip install -e '.[all,test]' && .venv/bin/hilbench demo"
)
TESTS = ".venv/bin/python -m pytest -q"


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    pytest.importorskip("mkdocs", reason="the manual needs the docs extra: "
                        "pip install -e '.[docs]'")
    out = tmp_path_factory.mktemp("site")
    proc = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--quiet", "--site-dir", str(out)],
        cwd=REPO, capture_output=True, text=True, timeout=120,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )
    assert proc.returncode == 0, f"mkdocs build --strict failed:\n{proc.stdout}\n{proc.stderr}"
    return out


def top_level_commands() -> list[str]:
    """The command names `hilbench --help` lists (core, drivers' and plugins' alike)."""
    help_text = subprocess.run([sys.executable, "-m", "hilbench", "--help"], cwd=REPO,
                               capture_output=True, text=True, check=True, timeout=60).stdout
    listing = help_text.split("\nCommands:\n", 1)[1]
    return re.findall(r"^  (\S+)", listing, re.M)


@pytest.mark.slow
def test_every_top_level_command_is_in_the_cli_reference(site: Path):
    page = (site / "reference/cli/index.html").read_text()
    commands = top_level_commands()
    assert len(commands) >= 20, commands
    missing = [c for c in commands if not re.search(rf"hilbench {re.escape(c)}\b", page)]
    assert missing == [], f"commands missing from the CLI reference: {missing}"
    # mkdocs-click's table style prints click 8.3's unset defaults as "Sentinel.UNSET".
    assert "Sentinel" not in page


@pytest.mark.slow
def test_the_campaign_reference_covers_every_table_and_key(site: Path):
    from hilbench.orchestrator.campaign import campaign_schema

    page = (site / "reference/campaign-schema/index.html").read_text()
    schema = campaign_schema()
    tables = [schema, *schema["$defs"].values()]
    keys = {key for table in tables for key in table.get("properties", {})}
    assert len(keys) > 30
    missing = sorted(k for k in keys if f"<code>{k}</code>" not in page)
    assert missing == [], f"campaign keys missing from the generated reference: {missing}"


@pytest.mark.slow
def test_the_protocol_pages_are_the_protocol_files(site: Path):
    """protocols/*.md stay the single source: each page holds its file's title and sections."""
    for name in ("agent-protocol", "cassette", "serial"):
        source = (REPO / "protocols" / f"{name}.md").read_text()
        title = source.splitlines()[0].lstrip("# ").strip()
        sections = len(re.findall(r"^## ", source, re.M))
        page = (site / "protocols" / name / "index.html").read_text()
        assert title in page, name
        assert sections > 0 and len(re.findall(r"<h2 ", page)) >= sections, name


def test_the_manual_has_its_pages():
    pages = list((REPO / "docs").rglob("*.md"))
    assert len(pages) >= 8, pages


def test_readme_is_a_front_page_with_the_two_commands():
    readme = (REPO / "README.md").read_text()
    assert len(readme.splitlines()) <= 150
    assert SETUP_AND_DEMO in readme
    assert TESTS in readme
    # The test command is the one CI runs.
    assert f"{TESTS} " in (REPO / ".ci/run").read_text()


def test_readme_links_lead_to_files():
    readme = (REPO / "README.md").read_text()
    targets = [t for t in re.findall(r"\]\(([^)#]+)", readme) if "://" not in t]
    assert targets
    missing = [t for t in targets if not (REPO / t).exists()]
    assert missing == [], f"README links to files that do not exist: {missing}"


def test_paths_the_manual_names_exist():
    """A file the manual points to (`hilbench/…`, `drivers/…`, `tests/…`) is still there."""
    named = r"`((?:hilbench|drivers|tests|protocols|scripts|examples|firmware)/[\w./-]+?)`"
    stale = [(page.relative_to(REPO).as_posix(), path)
             for page in (REPO / "docs").rglob("*.md")
             for path in re.findall(named, page.read_text())
             if "NAME" not in path and not (REPO / path).exists()]  # NAME: a placeholder
    assert stale == [], f"the manual names files that do not exist: {stale}"
