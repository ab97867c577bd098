"""What a lab installs to run the daemon as a service (`hilbench systemd`): a system user and
group made by systemd-sysusers, the daemon's unit running the installed entry point, the bench
lock folder (tmpfiles.d), a profile snippet naming the store, and units for network agents.

The store and the control socket are the ``hilbench`` group's: the unit's state directory is
setgid and group-writable (``StateDirectoryMode=2770``, ``UMask=0007``) and the daemon runs with
``--group``, so an engineer in that group runs `hilbench status` and `hilbench queue` without
sudo, and nobody else reads the results.
"""

from __future__ import annotations

import grp
import shlex
import shutil
import sys
from pathlib import Path

from hilbench.orchestrator.campaign import AgentSpec, Campaign

DEFAULT_STATE_DIR = "/var/lib/hilbench"
STORE_NAME = "hilbench.sqlite"
SERIAL_GROUPS = ("dialout", "plugdev")  # serial ports (Arduino), USB devices (Xylo) on Debian
UNIT_DIR = "etc/systemd/system"
SYSUSERS = "etc/sysusers.d/hilbench.conf"
TMPFILES = "etc/tmpfiles.d/hilbench.conf"
PROFILE = "etc/profile.d/hilbench.sh"
DAEMON_UNIT = "hilbench-daemon.service"


def entry_point() -> list[str]:
    """The hilbench command as this process was started, absolute: the ``hilbench`` script that
    runs now (``sys.argv[0]``), else the one on PATH, else the one beside this interpreter,
    else ``python -m hilbench`` with this interpreter."""
    argv0 = sys.argv[0] if sys.argv else ""
    if Path(argv0).name == "hilbench":
        found = shutil.which(argv0) or argv0
        if Path(found).is_file():
            return [str(Path(found).absolute())]
    on_path = shutil.which("hilbench")
    if on_path:
        return [str(Path(on_path).absolute())]
    beside = Path(sys.executable).with_name("hilbench")
    if beside.is_file():
        return [str(beside)]
    return [sys.executable, "-m", "hilbench"]


def checkout() -> Path | None:
    """The source tree hilbench is imported from when it is one (an editable install: its
    ``pyproject.toml`` beside the package), else None."""
    import hilbench

    root = Path(hilbench.__file__).resolve().parent.parent
    return root if (root / "pyproject.toml").is_file() else None


def serial_groups() -> list[str]:
    """The serial and USB device groups this host has (a unit naming a missing group fails)."""
    present = []
    for name in SERIAL_GROUPS:
        try:
            grp.getgrnam(name)
        except KeyError:
            continue
        present.append(name)
    return present


def sysusers(user: str, home: str = DEFAULT_STATE_DIR) -> str:
    """The sysusers.d file: a system user ``user`` and its group of the same name."""
    return (f"# /{SYSUSERS}  (then `systemd-sysusers`; add engineers with "
            f"`usermod -aG {user} NAME`)\n"
            f'u {user} - "hilbench measurement daemon" {home} /usr/sbin/nologin\n')


def profile(db: str) -> str:
    """A login snippet naming the daemon's store, so `status` and `queue` find it anywhere."""
    return (f"# /{PROFILE}  (`hilbench status` and `hilbench queue` read the daemon's store)\n"
            f"export HILBENCH_DB={shlex.quote(db)}\n")


def daemon_unit(config: Path | None, user: str, watchdog_s: int, db: str | None = None,
                supplementary: list[str] | None = None) -> str:
    """The daemon's unit, run as ``user`` with group ``user`` and the ``supplementary`` device
    groups. Its store is ``db``, else the config's ``store`` (``db`` ""); with neither, a file
    in the unit's own state directory (systemd starts services in ``/``, where the default
    ``./hilbench.sqlite`` could not be written)."""
    args = [*entry_point(), "daemon"]
    if config:
        args += ["--config", str(config.resolve())]
    if db is None:
        db = f"{DEFAULT_STATE_DIR}/{STORE_NAME}"
    if db:
        args += ["--db", db]
    args += ["--group", user]
    groups = f"SupplementaryGroups={' '.join(supplementary)}\n" if supplementary else ""
    return f"""# /{UNIT_DIR}/{DAEMON_UNIT}
[Unit]
Description=hilbench measurement daemon (queue, schedules, status)
After=network-online.target
Wants=network-online.target

[Service]
Type=notify
NotifyAccess=main
ExecStart={shlex.join(args)}
User={user}
Group={user}
{groups}# The store and the control socket are the group's: its members run `hilbench status`
# and `hilbench queue` without sudo (the daemon gives the store and socket to --group).
StateDirectory=hilbench
StateDirectoryMode=2770
UMask=0007
WorkingDirectory={DEFAULT_STATE_DIR}
WatchdogSec={watchdog_s}
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

    return f"""# /{TMPFILES}  (then `systemd-tmpfiles --create hilbench.conf`)
# The bench lock folder: one per machine, root's, every user's campaigns lock the bench there.
d {SYSTEM_LOCK_DIR} {SHARED_FOLDER_MODE:o} root root -
"""


def agent_unit(spec: AgentSpec, campaign: Campaign, keys_dir: str, user: str,
               supplementary: list[str] | None = None) -> str:
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
    groups = f"SupplementaryGroups={' '.join(supplementary)}\n" if supplementary else ""
    command = (f"{shlex.join(entry_point())} agent --driver {spec.driver} --id {spec.id} "
               f"{where}{key_args}{options}")
    return f"""# /{UNIT_DIR}/hilbench-agent-{spec.id}.service  (on the host of agent {spec.id})
{note}[Unit]
Description=hilbench agent {spec.id} ({spec.driver})
After=network-online.target
Wants=network-online.target

[Service]
ExecStart={command}
User={user}
{groups}Restart=on-failure
RestartSec=2

[Install]
WantedBy=multi-user.target
"""


def file_name(block: str) -> str:
    """The path a block names in its first line (``# /etc/…  (note)``), relative to ``/``."""
    return block.splitlines()[0].removeprefix("# /").split()[0]


def write_tree(out: Path, blocks: list[str]) -> list[Path]:
    """Write each block under ``out`` at the path its first line names (``out`` is laid out
    as ``/``: ``cp -r OUT/etc/. /etc/`` installs it); returns the files written."""
    written = []
    for block in blocks:
        path = out / file_name(block)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(block)
        written.append(path)
    return written
