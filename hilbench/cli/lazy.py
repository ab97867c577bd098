"""A click group whose sub-commands are imported on first use, keeping start-up fast and the
core importable without the heavier optional dependencies of some commands.

Commands from outside the core (a driver's ``hilbench arduino``, a plugin's group) join through
an entry-point group: ``[project.entry-points."hilbench.commands"]`` for top-level commands,
``"hilbench.benchmarks"`` for ``hilbench bench NAME``; each entry names a click command as
``"module:attribute"``. The core never names the module."""

from __future__ import annotations

import importlib
import logging
from importlib.metadata import EntryPoint
from typing import Any

import click

from hilbench.entry_points import entry_points

log = logging.getLogger(__name__)

# The entry-point groups a plugin registers its commands in.
COMMANDS_GROUP = "hilbench.commands"
BENCHMARKS_GROUP = "hilbench.benchmarks"


def plugin_commands(group: str) -> dict[str, EntryPoint]:
    """The installed entry points of ``group`` by name (the first of a name wins)."""
    found: dict[str, EntryPoint] = {}
    for ep in entry_points(group=group):
        found.setdefault(ep.name, ep)
    return found


def _unloadable(name: str, ep: EntryPoint, exc: Exception) -> click.Command:
    """A stand-in for a plugin command that cannot be imported: listed, and when run it says
    why in one line (exit 2) instead of breaking every other command's help."""
    why = f"command {name!r} ({ep.value}) could not be loaded: {type(exc).__name__}: {exc}"

    def fail() -> None:
        raise click.UsageError(why)

    return click.Command(name, callback=fail, help=f"Not available: {why}",
                         short_help="(not available: could not be loaded)")


class LazyGroup(click.Group):
    """``lazy_commands`` maps a command name to ``"module:attribute"`` of a click command;
    ``entry_point_group`` adds the commands installed plugins register there (a core command
    of the same name wins, and the plugin's is ignored with a warning)."""

    def __init__(self, *args: Any, lazy_commands: dict[str, str] | None = None,
                 entry_point_group: str | None = None, **kw: Any) -> None:
        super().__init__(*args, **kw)
        self.lazy_commands = dict(lazy_commands or {})
        self.entry_point_group = entry_point_group
        self._plugins: dict[str, EntryPoint] | None = None

    def plugins(self) -> dict[str, EntryPoint]:
        if self._plugins is None:
            found = plugin_commands(self.entry_point_group) if self.entry_point_group else {}
            for name in sorted(found.keys() & (set(self.commands) | set(self.lazy_commands))):
                log.warning("entry point %s = %s in %s is ignored: %r is a hilbench command",
                            name, found[name].value, self.entry_point_group, name)
                del found[name]
            self._plugins = found
        return self._plugins

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(set(super().list_commands(ctx)) | set(self.lazy_commands)
                      | set(self.plugins()))

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in self.lazy_commands:
            module_name, attr = self.lazy_commands[cmd_name].split(":")
            return getattr(importlib.import_module(module_name), attr)
        ep = self.plugins().get(cmd_name)
        if ep is not None:
            try:
                command = ep.load()
            except Exception as exc:  # a plugin's import error must not break the CLI
                return _unloadable(cmd_name, ep, exc)
            if not isinstance(command, click.Command):
                return _unloadable(cmd_name, ep, TypeError("not a click command"))
            return command
        return super().get_command(ctx, cmd_name)
