"""How the daemon says why it stops, or why its queue stands: in its log and on its terminal."""

from __future__ import annotations

import signal

MODE_SAID = {
    "run": "the queue runs (`hilbench queue resume`)",
    "pause": "pausing after the unit in progress (`hilbench queue pause`)",
    "pause_now": "pausing now, the run in progress aborted (`hilbench queue pause --now`)",
    "stop": "the current campaign finishes, then nothing starts until `hilbench queue resume` "
            "(`hilbench queue stop`; the daemon keeps running)",
}


def signal_said(signum: int) -> str:
    """A stop signal as a person names it: SIGINT (Ctrl-C), SIGTERM (systemctl stop, kill)."""
    how = {signal.SIGINT: "Ctrl-C", signal.SIGTERM: "systemctl stop or kill"}.get(signum)
    return signal.Signals(signum).name + (f" ({how})" if how else "")
