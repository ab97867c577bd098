"""systemd unit files for the daemon and for agents on device hosts (`hilbench systemd`)."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

from hilbench.orchestrator.campaign import AgentSpec, Campaign


def _hilbench() -> str:
    """The hilbench command as installed here (a venv's, not one on PATH by chance)."""
    beside = Path(sys.executable).with_name("hilbench")
    return str(beside) if beside.exists() else (shutil.which("hilbench") or "hilbench")


DEFAULT_STATE_DIR = "/var/lib/hilbench"


def daemon_unit(config: Path | None, user: str, watchdog_s: int, db: str | None = None) -> str:
    """The daemon's unit. Its store is ``db``, else the config's ``store``; with neither, a file
    in the unit's own state directory (systemd starts services in ``/``, where the default
    ``./hilbench.sqlite`` could not be written)."""
    config_arg = f" --config {config.resolve()}" if config else ""
    state = ""
    if db is None:
        db = f"{DEFAULT_STATE_DIR}/hilbench.sqlite"
        state = (f"StateDirectory=hilbench\nStateDirectoryMode=0700\n"
                 f"WorkingDirectory={DEFAULT_STATE_DIR}\n")
    db_arg = f" --db {db}" if db else ""
    return f"""# hilbench-daemon.service
[Unit]
Description=hilbench measurement daemon (queue, schedules, status)
After=network-online.target
Wants=network-online.target

[Service]
Type=notify
NotifyAccess=main
ExecStart={_hilbench()} daemon{config_arg}{db_arg}
User={user}
{state}WatchdogSec={watchdog_s}
Restart=on-failure
RestartSec=5
# SIGTERM: the run in progress is marked aborted, the daemon exits 143; the next start resumes.
KillMode=mixed
TimeoutStopSec=90
SuccessExitStatus=143

[Install]
WantedBy=multi-user.target
"""


def lock_folder_tmpfiles() -> str:
    """The tmpfiles.d line that makes the bench lock folder at boot, root's and mode 1777 (see
    :mod:`hilbench.orchestrator.locks`): made by the daemon's own user instead, it would be
    refused by every other user's campaigns (its owner could remove their locks)."""
    from hilbench.orchestrator.lockfile import SHARED_FOLDER_MODE
    from hilbench.orchestrator.locks import SYSTEM_LOCK_DIR

    return f"""# /etc/tmpfiles.d/hilbench.conf  (then `systemd-tmpfiles --create hilbench.conf`)
# The bench lock folder: one per machine, root's, every user's campaigns lock the bench there.
d {SYSTEM_LOCK_DIR} {SHARED_FOLDER_MODE:o} root root -
"""


def agent_unit(spec: AgentSpec, campaign: Campaign, keys_dir: str, user: str) -> str:
    """A unit for the agent ``spec`` on its device host, keyed as the campaign expects."""
    if spec.connects:
        where = f"--connect {campaign.listen or 'tcp://ORCHESTRATOR:5600'}"
    else:
        port = (spec.address or "tcp://HOST:5555").rsplit(":", 1)[-1]
        where = f"--bind tcp://0.0.0.0:{port}"
    keyed = spec.key is not None or campaign.key is not None
    key_args = (f" --key {keys_dir}/{spec.id}.key_secret --authorized {keys_dir}/orchestrators"
                if keyed else " --insecure")
    note = "" if keyed else (
        "# WARNING: this campaign gives the agent no key; it would serve in plaintext.\n"
        "# Give it one (`hilbench keys generate`), see docs/operation/network.md.\n")
    options = "".join(f" -o {k}={v}" for k, v in spec.options.items())
    return f"""# hilbench-agent-{spec.id}.service  (on the host of agent {spec.id})
{note}[Unit]
Description=hilbench agent {spec.id} ({spec.driver})
After=network-online.target
Wants=network-online.target

[Service]
ExecStart={_hilbench()} agent --driver {spec.driver} --id {spec.id} {where}{key_args}{options}
User={user}
Restart=on-failure
RestartSec=2

[Install]
WantedBy=multi-user.target
"""
