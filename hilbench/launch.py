"""The `hilbench` program's first instant: stop signals are taken over before anything else is
imported, so SIGINT or SIGTERM at any moment of start-up exits 130 or 143 with nothing
half-done, never click's "Aborted!" (exit 1) or a traceback from inside an import."""

from __future__ import annotations

import sys


def main() -> None:
    from hilbench.orchestrator.interrupt import Interrupted, interrupt_from_now

    interrupt_from_now()
    try:
        from hilbench.cli import main as cli_main

        cli_main()
    except Interrupted as exc:  # while importing, or a command that does not handle it itself
        print(f"hilbench: {exc}", file=sys.stderr)
        raise SystemExit(exc.exit_code) from None
