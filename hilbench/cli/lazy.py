"""A click group whose sub-commands are imported on first use, keeping start-up fast and the
core importable without the heavier optional dependencies of some commands."""

from __future__ import annotations

import importlib
from typing import Any

import click


class LazyGroup(click.Group):
    """``lazy_commands`` maps a command name to ``"module:attribute"`` of a click command."""

    def __init__(self, *args: Any, lazy_commands: dict[str, str] | None = None, **kw: Any) -> None:
        super().__init__(*args, **kw)
        self.lazy_commands = dict(lazy_commands or {})

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(set(super().list_commands(ctx)) | set(self.lazy_commands))

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in self.lazy_commands:
            module_name, attr = self.lazy_commands[cmd_name].split(":")
            return getattr(importlib.import_module(module_name), attr)
        return super().get_command(ctx, cmd_name)
