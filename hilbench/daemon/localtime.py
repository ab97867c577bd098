"""Times as the daemon's host shows them: its local zone, always named.

A schedule fires in its own zone; `queue`, `schedule list` and `status` show every time in the
server's local zone with the zone's abbreviation (``2026-11-29 22:00:00 CET``), so a time is
never read as UTC when it is not (or the other way round)."""

from __future__ import annotations

import os
import time


def zone_name() -> str:
    """This host's IANA zone: ``$TZ`` when it names one, else the one /etc/localtime links to,
    else UTC."""
    tz = os.environ.get("TZ", "").lstrip(":")
    if tz and "/" in tz:
        return tz
    try:
        target = os.readlink("/etc/localtime")
    except OSError:
        return "UTC"
    return target.split("zoneinfo/", 1)[1] if "zoneinfo/" in target else "UTC"


def local_when(t: float | None, seconds: bool = True) -> str:
    """``t`` (UTC seconds) in the host's local zone with its abbreviation; "-" for none."""
    if not t:
        return "-"
    return time.strftime("%Y-%m-%d %H:%M" + (":%S" if seconds else "") + " %Z",
                         time.localtime(t))
