"""The `hilbench` program's first instant: stop signals are taken over before anything else is
imported, so SIGINT or SIGTERM at any moment of start-up exits 130 or 143 with nothing
half-done, never click's "Aborted!" (exit 1) or a traceback from inside an import.

And its last resort: every input a user hands hilbench is checked where it is read, with one
line naming the file; an error that still escapes a command is a bug, said in one line
(exit :data:`EXIT_INTERNAL`) with the traceback kept in a private log file for the report."""

from __future__ import annotations

import os
import sys
import time
import traceback
from pathlib import Path

EXIT_INTERNAL = 70  # sysexits.h EX_SOFTWARE: an internal error
EXIT_BROKEN_PIPE = 141  # 128 + SIGPIPE, as a shell reports a reader that went away


def main() -> None:
    from hilbench.orchestrator.interrupt import Interrupted, interrupt_from_now

    interrupt_from_now()
    try:
        from hilbench.cli import main as cli_main

        cli_main()
    except Interrupted as exc:  # while importing, or a command that does not handle it itself
        print(f"hilbench: {exc}", file=sys.stderr)
        raise SystemExit(exc.exit_code) from None
    except BrokenPipeError:  # `hilbench results | head`: the reader has what it wanted
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        raise SystemExit(EXIT_BROKEN_PIPE) from None
    except Exception as exc:  # the last resort, said in one line
        where = _keep_traceback()
        kept = f"; the traceback is in {where}" if where else ""
        print(f"hilbench: internal error, {type(exc).__name__}: {_one_line(exc)}{kept} "
              "(please report it)", file=sys.stderr)
        raise SystemExit(EXIT_INTERNAL) from None


def _one_line(exc: BaseException, limit: int = 300) -> str:
    text = " ".join(str(exc).split())
    return text if len(text) <= limit else text[:limit] + "…"


def _keep_traceback() -> Path | None:
    """Write the traceback being handled to an owner-only file under the user's state folder
    (``$XDG_STATE_HOME/hilbench``, else ``~/.local/state/hilbench``); its path, or None when
    it cannot be written."""
    from hilbench.private_files import open_private, private_dir

    base = os.environ.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local",
                                                            "state")
    try:
        folder = private_dir(Path(base) / "hilbench", parents=True)
        path = folder / f"crash-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}.log"
        from hilbench.store.engine import redact  # a store URL's password stays out

        with open_private(path, "x") as fh:
            fh.write(redact(f"hilbench {' '.join(sys.argv[1:])}\n{traceback.format_exc()}"))
    except OSError:
        return None
    return path
