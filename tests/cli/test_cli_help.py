"""Every command answers --help, and the top level lists them all."""

from __future__ import annotations

import click
import pytest
from click.testing import CliRunner

from hilbench.cli import SUBCOMMANDS, cli


def all_command_paths() -> list[list[str]]:
    ctx = click.Context(cli)
    paths = []
    for name in SUBCOMMANDS:
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
