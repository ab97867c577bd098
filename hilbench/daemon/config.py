"""The daemon's configuration file (TOML), validated; a mistake names file, table and key.

```toml
[daemon]
store = "/var/lib/hilbench/hilbench.sqlite"
control = "ipc:///run/hilbench/control.sock"  # default: STORE.logs/control.sock
group = "hilbench"                    # its members may ask for status too (default: owner only)
key = "keys/daemon.key_secret"        # CurveZMQ (then a TCP address): the daemon's key pair
authorized = "keys/clients"           # public keys of who may ask for status
retries = 3                           # starts in a row that finish no unit, then 'failed'
retry_delay_s = 30
disk_min_free_mb = 1024
bench = "bench-a"                     # default: the host name
queue = "postgresql://lab-db/hilbench"  # a queue shared by benches (default: the store)
push_to = "postgresql://lab-db/hilbench"  # finished runs copied there, by run id
serves = ["tcp://bench-a:5555", "TCPIP::10.0.0.7::5025::SOCKET"]

[notify]
urls = ["ntfys://ntfy.sh/my-bench", "mailto://user:pass@example.com"]   # Apprise URLs
command = "/usr/local/bin/bench-event"    # gets the event as JSON on stdin
```
Relative paths are relative to the file's folder.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

class ConfigError(ValueError):
    """The daemon's configuration cannot be used; one line per problem."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class DaemonTable(_Strict):
    store: Path | None = Field(None, description="the store file (queue, history and results)")
    control: str | None = Field(None, description="ZeroMQ address of the control socket "
                                "[default: ipc://STORE.logs/control.sock, a Unix socket only "
                                "the owner (and group) can open]")
    group: str | None = Field(None, description="a local group whose members may ask for "
                              "status and wake the daemon, as its owner does")
    key: Path | None = Field(None, description="the daemon's CurveZMQ secret key file")
    authorized: Path | None = Field(None, description="folder of public keys allowed to ask")
    insecure: bool = Field(False, description="plaintext control socket on a non-loopback address")
    retries: int = Field(3, ge=0, description="starts in a row that finish no unit, then failed")
    retry_delay_s: float = Field(30.0, ge=0)
    busy_delay_s: float = Field(10.0, ge=0, description="wait when the bench is held by another")
    disk_min_free_mb: float = Field(1024.0, ge=0)
    poll_s: float = Field(0.2, gt=0, le=5, description="how often the loop looks at the queue")
    bench: str | None = Field(None, description="the bench this daemon serves [default: "
                              "the host name]; it runs only items for this bench (or any)")
    queue: str | None = Field(None, description="where the queue is: a postgresql:// URL "
                              "shared by several benches [default: the store file]")
    push_to: str | None = Field(None, description="push finished runs of the store to this "
                                "postgresql:// database, by run id")
    push_interval_s: float = Field(5.0, gt=0, description="how often pending runs are pushed")
    serves: list[str] = Field(default_factory=list, description="agent addresses and "
                              "instrument resources of this bench (queue add maps a campaign "
                              "naming them to this bench)")
    down_after_s: float = Field(30.0, gt=0, description="a bench not seen this long is down")


class NotifyTable(_Strict):
    urls: list[str] = Field(default_factory=list, description="Apprise URLs")
    command: str | None = Field(None, description="command given each event as JSON on stdin")
    timeout_s: float = Field(30.0, gt=0)


class DaemonConfig(_Strict):
    daemon: DaemonTable = Field(default_factory=DaemonTable)
    notify: NotifyTable = Field(default_factory=NotifyTable)
    source: str = ""


def load_config(path: Path | None) -> DaemonConfig:
    """Read ``path`` (None: every default)."""
    if path is None:
        return DaemonConfig()
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(f"cannot read daemon config {path}: {exc.strerror}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path} is not valid TOML: {exc}") from None
    try:
        config = DaemonConfig.model_validate({**data, "source": str(path)})
    except ValidationError as exc:
        lines = [
            f"{path} [{err['loc'][0]}] {'.'.join(str(p) for p in err['loc'][1:])}: {err['msg']}"
            for err in exc.errors()
        ]
        raise ConfigError("\n".join(lines)) from None
    base = path.parent
    d = config.daemon
    for name in ("store", "key", "authorized"):
        value = getattr(d, name)
        if value is not None and not value.is_absolute():
            setattr(d, name, base / value)
    if (d.key is None) != (d.authorized is None):
        raise ConfigError(f"{path} [daemon]: key and authorized go together (CurveZMQ)")
    return config
