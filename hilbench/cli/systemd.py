"""`hilbench systemd`: what a lab installs to run the daemon as a service."""

from __future__ import annotations

from pathlib import Path

import click

from hilbench.cli import EXIT_USAGE
from hilbench.cli.daemon import _CONFIG, _config


@click.command()
@_CONFIG
@click.option("--campaign", "campaigns", multiple=True,
              type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="Also make a unit for each agent of this campaign that hilbench does not "
                   "spawn (repeatable).")
@click.option("--keys-dir", default="/etc/hilbench/keys", show_default=True,
              help="Where the agent hosts keep their keys.")
@click.option("--user", "service_user", default="hilbench", show_default=True,
              help="The system user and group the daemon runs as (made by the sysusers file); "
                   "its group's members may run `status` and `queue`.")
@click.option("--watchdog-s", type=click.IntRange(min=5), default=60, show_default=True)
@click.option("--db", "db", default=None, envvar="HILBENCH_DB", metavar="FILE|URL",
              help="The daemon's store [default: the config's store, else "
                   "/var/lib/hilbench/hilbench.sqlite in the unit's own state directory].")
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Write the files under this folder, laid out as / (OUT/etc/systemd/system/"
                   "…, OUT/etc/sysusers.d/…), instead of printing them.")
def systemd(config_path: Path | None, campaigns: tuple[Path, ...], keys_dir: str,
            service_user: str, watchdog_s: int, db: str | None, out: Path | None) -> None:
    """Make what a lab installs to run the daemon as a service: a sysusers.d file (system
    user and group USER), the bench lock folder's tmpfiles.d line, the daemon's unit
    (Type=notify, watchdog, restart on failure, the serial/USB groups dialout and plugdev
    where this host has them), a profile.d line naming the store, and a unit per network
    agent of the given campaigns, with its keys.

    The unit runs the hilbench command this one was started as (made absolute). Its store
    folder (StateDirectory, setgid, 2770) and control socket are USER's group's: add
    engineers with `usermod -aG USER NAME` and they run `hilbench status` and `hilbench
    queue` without sudo. Install (as root):

    \b
      hilbench systemd --out /tmp/hb && cp -r /tmp/hb/etc/. /etc/
      systemd-sysusers && systemd-tmpfiles --create hilbench.conf
      systemctl daemon-reload && systemctl enable --now hilbench-daemon

    Without --out each file is printed, its path in its first comment line.
    """
    from hilbench.daemon.systemd import (
        agent_unit,
        checkout,
        daemon_unit,
        lock_folder_tmpfiles,
        profile,
        serial_groups,
        sysusers,
        write_tree,
    )
    from hilbench.orchestrator.campaign import CampaignError, load_campaign
    from hilbench.store.engine import is_url

    if db is None and config_path is not None and _config(config_path).daemon.store is not None:
        db = ""  # the config names it
    elif db is not None and not is_url(db):
        db = str(Path(db).resolve())
    groups = serial_groups()
    blocks = [sysusers(service_user), lock_folder_tmpfiles(),
              daemon_unit(config_path, service_user, watchdog_s, db, groups)]
    if db != "":
        from hilbench.daemon.systemd import DEFAULT_STATE_DIR, STORE_NAME

        blocks.append(profile(db or f"{DEFAULT_STATE_DIR}/{STORE_NAME}"))
    for path in campaigns:
        try:
            campaign = load_campaign(path)
        except CampaignError as exc:
            click.echo(f"{click.style('error:', fg='red')} {exc}", err=True)
            raise SystemExit(EXIT_USAGE) from None
        blocks += [agent_unit(spec, campaign, keys_dir, service_user, groups)
                   for spec in campaign.agents if not spec.spawn]
    source = checkout()
    if source is not None:
        click.echo(f"{click.style('warning:', fg='yellow')} hilbench runs from the source tree "
                   f"{source} (an editable install): the unit runs it from there, so that tree "
                   "must stay, readable by the service user; a service is better run from a "
                   "copy installed outside it (e.g. `python -m venv /opt/hilbench && "
                   f"/opt/hilbench/bin/pip install {source}`)", err=True)
    if out is None:
        click.echo("\n".join(blocks))
        return
    for written in write_tree(out, blocks):
        click.echo(f"wrote {written}")
