"""Every command answers --help, and the top level lists them all."""

from __future__ import annotations

import click
import pytest
from click.testing import CliRunner

from hilbench.cli import SUBCOMMANDS, cli


def all_command_paths() -> list[list[str]]:
    """Every command and sub-command, the core's and those drivers register by entry point."""
    ctx = click.Context(cli)
    paths = []
    for name in cli.list_commands(ctx):
        cmd = cli.get_command(ctx, name)
        paths.append([name])
        if isinstance(cmd, click.Group):
            sub_ctx = click.Context(cmd, parent=ctx)
            paths += [[name, sub] for sub in cmd.list_commands(sub_ctx)]
    return paths


@pytest.mark.parametrize("path", all_command_paths(), ids=" ".join)
def test_every_command_has_help(path):
    result = CliRunner().invoke(cli, [*path, "--help"])
    assert result.exit_code == 0, result.output
    assert "Usage:" in result.output
    # A help text that explains something, not just the usage line.
    assert len(result.output.strip().splitlines()) > 3


def test_top_level_help_lists_every_command():
    result = CliRunner().invoke(cli, ["--help"])
    for name in SUBCOMMANDS:
        assert name in result.output


def test_driver_commands_join_by_entry_point():
    """`hilbench arduino` and `hilbench xylo` are the drivers' own, found in the
    hilbench.commands entry points; the core's table does not name them."""
    ctx = click.Context(cli)
    assert {"arduino", "xylo"} <= set(cli.list_commands(ctx))
    assert not {"arduino", "xylo"} & set(SUBCOMMANDS)
    assert cli.get_command(ctx, "arduino").callback.__module__ == "hilbench_drivers.arduino.cli"
    assert cli.get_command(ctx, "xylo").callback.__module__ == "hilbench_drivers.xylo.cli"
