"""A plugin's command joins `hilbench` through the hilbench.commands entry-point group: an
installed distribution (a real .dist-info on sys.path, found by importlib.metadata) adds a
command; one that cannot be imported is listed and says why in one line; one that takes a core
command's name is ignored."""

from __future__ import annotations

import sys
import textwrap

import click
import pytest
from click.testing import CliRunner

from hilbench.cli.lazy import COMMANDS_GROUP, LazyGroup


@pytest.fixture
def plugin_dist(tmp_path, monkeypatch):
    """Installs a small distribution with three hilbench.commands entries on sys.path."""
    (tmp_path / "hb_sample_plugin.py").write_text(textwrap.dedent('''
        import click

        @click.command()
        @click.option("--n", default=2)
        def greet(n):
            """Greets the bench."""
            click.echo("hello " * n)

        @click.command()
        def run():
            click.echo("the plugin's run")
    '''))
    dist = tmp_path / "hb_sample_plugin-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: hb-sample-plugin\n"
                                   "Version: 0.1\n")
    (dist / "entry_points.txt").write_text(textwrap.dedent(f"""
        [{COMMANDS_GROUP}]
        greet = hb_sample_plugin:greet
        broken = hb_sample_plugin_missing:command
        run = hb_sample_plugin:run
    """))
    monkeypatch.syspath_prepend(str(tmp_path))
    yield
    sys.modules.pop("hb_sample_plugin", None)


def make_group() -> click.Group:
    @click.group(cls=LazyGroup, lazy_commands={"run": "tests.cli.test_plugin_commands:core_run"},
                 entry_point_group=COMMANDS_GROUP)
    def top() -> None:
        """A top-level group as `hilbench` builds it."""

    return top


@click.command()
def core_run() -> None:
    click.echo("the core's run")


def test_an_installed_plugin_adds_a_command(plugin_dist):
    group = make_group()
    result = CliRunner().invoke(group, ["--help"])
    assert result.exit_code == 0, result.output
    assert "greet" in result.output and "broken" in result.output
    result = CliRunner().invoke(group, ["greet", "--n", "3"])
    assert result.exit_code == 0, result.output
    assert result.output.strip() == "hello hello hello"


def test_a_plugin_that_cannot_load_says_why_in_one_line(plugin_dist):
    result = CliRunner().invoke(make_group(), ["broken"])
    assert result.exit_code == 2
    assert "hb_sample_plugin_missing:command" in result.output
    assert "ModuleNotFoundError" in result.output
    assert "Traceback" not in result.output


def test_a_core_command_wins_over_a_plugin_of_the_same_name(plugin_dist, caplog):
    group = make_group()
    assert CliRunner().invoke(group, ["run"]).output.strip() == "the core's run"
    listing = CliRunner().invoke(group, ["--help"])  # the listing says which entry was dropped
    assert listing.exit_code == 0
    assert "is ignored" in caplog.text and "hb_sample_plugin:run" in caplog.text
