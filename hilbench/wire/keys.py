"""CurveZMQ keys: who may talk to an agent, and over which addresses plaintext is allowed.

Key files are pyzmq's certificate files (``NAME.key`` holds the public key, ``NAME.key_secret``
both keys), made by ``hilbench keys generate``. A side that binds is the CURVE server: it holds
its secret key and a ZAP authenticator (pyzmq's :class:`ThreadAuthenticator`) that admits only
the listed public keys; anyone else gets no connection at all. Without keys, talking is allowed
over loopback only unless the caller says ``insecure``.
"""

from __future__ import annotations

import hashlib
import ipaddress
import json
import logging
import os
from dataclasses import dataclass
from pathlib import Path

import zmq
import zmq.auth

from hilbench.loglimit import LogLimiter
from hilbench.private_files import private_dir

log = logging.getLogger(__name__)

PUBLIC_SUFFIX = ".key"
SECRET_SUFFIX = ".key_secret"


class KeyFileError(ValueError):
    """A key file is missing, unreadable or not what it should be; the message names it."""


@dataclass(frozen=True)
class KeyPair:
    """One side's CurveZMQ identity (z85-encoded keys, as pyzmq wants them)."""

    public: bytes
    secret: bytes
    source: str  # the file it came from, for messages

    @property
    def fingerprint(self) -> str:
        return fingerprint(self.public)


def fingerprint(public: bytes) -> str:
    """A short, stable name for a public key: SHA-256 of its 32 raw bytes, 16 hex digits."""
    digest = hashlib.sha256(zmq.utils.z85.decode(public)).hexdigest()[:16]
    return ":".join(digest[i : i + 4] for i in range(0, 16, 4))


def generate(name: str, out_dir: str | os.PathLike[str]) -> tuple[Path, Path]:
    """Write ``NAME.key`` and ``NAME.key_secret`` into ``out_dir``; the secret is owner-only."""
    if not name or "/" in name or name.startswith("."):
        raise KeyFileError(f"key name {name!r} must be a plain file name")
    out = Path(out_dir)
    public, secret = out / f"{name}{PUBLIC_SUFFIX}", out / f"{name}{SECRET_SUFFIX}"
    for path in (public, secret):
        if path.exists():
            raise KeyFileError(f"{path} already exists; remove it first to replace the key")
    private_dir(out, parents=True)  # a new folder of keys is owner-only, whatever the umask
    old_umask = os.umask(0o077)  # the secret is never readable by others, not even for a moment
    try:
        made_public, made_secret = zmq.auth.create_certificates(str(out), name)
    finally:
        os.umask(old_umask)
    os.chmod(made_secret, 0o600)
    os.chmod(made_public, 0o644)
    return Path(made_public), Path(made_secret)


def ephemeral_pair(source: str) -> KeyPair:
    """A fresh key pair held in memory only (spawned agents and their orchestrator)."""
    public, secret = zmq.curve_keypair()
    return KeyPair(public, secret, source)


def write_handover(fd: int, pair: KeyPair, authorized: list[bytes]) -> None:
    """Write an agent's key pair and the public keys it admits to ``fd`` (a pipe) and close it.

    How hilbench hands ephemeral keys to an agent it spawns: through an inherited descriptor,
    never the command line (which any local user can read in ``ps``) nor a file.
    """
    doc = {
        "public": pair.public.decode(),
        "secret": pair.secret.decode(),
        "authorized": [k.decode() for k in authorized],
    }
    with os.fdopen(fd, "w", encoding="ascii") as f:
        f.write(json.dumps(doc))


def read_handover(fd: int) -> tuple[KeyPair, dict[bytes, str]]:
    """The key pair and admitted public keys :func:`write_handover` sent down ``fd``."""
    try:
        with os.fdopen(fd, "r", encoding="ascii") as f:
            doc = json.loads(f.read())
        pair = KeyPair(doc["public"].encode(), doc["secret"].encode(), f"descriptor {fd}")
        authorized = {k.encode(): "the spawning orchestrator" for k in doc["authorized"]}
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise KeyFileError(f"cannot read keys from descriptor {fd}: {exc}") from None
    if len(pair.public) != 40 or len(pair.secret) != 40 or not authorized:
        raise KeyFileError(f"descriptor {fd} did not hold a key pair and authorized keys")
    return pair, authorized


def load_pair(path: str | os.PathLike[str]) -> KeyPair:
    """The key pair in a ``*.key_secret`` file."""
    public, secret = _load(path)
    if secret is None:
        raise KeyFileError(
            f"{path} holds no secret key (give the {SECRET_SUFFIX} file made by "
            "`hilbench keys generate`)"
        )
    mode = os.stat(path).st_mode & 0o077
    if mode:
        log.warning("secret key %s is readable by others (mode %o); chmod 600 it", path, mode)
    return KeyPair(public, secret, str(path))


def load_public(path: str | os.PathLike[str]) -> bytes:
    """The public key in a ``*.key`` (or ``*.key_secret``) file."""
    return _load(path)[0]


def load_authorized(directory: str | os.PathLike[str]) -> dict[bytes, str]:
    """Public key -> file name for every ``*.key`` file in ``directory`` (at least one)."""
    folder = Path(directory)
    if not folder.is_dir():
        raise KeyFileError(f"{folder} is not a folder of public keys")
    keys = {load_public(p): p.name for p in sorted(folder.glob(f"*{PUBLIC_SUFFIX}"))}
    if not keys:
        raise KeyFileError(f"{folder} holds no public keys (*{PUBLIC_SUFFIX} files)")
    return keys


def _load(path: str | os.PathLike[str]) -> tuple[bytes, bytes | None]:
    try:
        public, secret = zmq.auth.load_certificate(os.fspath(path))
    except OSError as exc:
        raise KeyFileError(f"cannot read key file {path}: {exc.strerror or exc}") from None
    except Exception as exc:  # pyzmq raises ValueError or KeyError on a malformed file
        raise KeyFileError(f"{path} is not a CurveZMQ key file: {exc}") from None
    if public is None or len(public) != 40:
        raise KeyFileError(f"{path} holds no public key")
    return public, secret


class Gatekeeper:
    """A ZAP authenticator on ``context`` admitting exactly ``allowed`` public keys."""

    def __init__(
        self, context: zmq.Context, allowed: dict[bytes, str], limiter: LogLimiter | None = None
    ) -> None:
        self.allowed = dict(allowed)
        self.refused = 0
        self.limiter = limiter or LogLimiter(logger=log)
        # Imported here: zmq.auth.thread pulls in asyncio and ssl (~25 ms), which every process
        # that reads keys would pay for, and only an agent or orchestrator with keys needs it.
        from zmq.auth.thread import ThreadAuthenticator

        self._auth = ThreadAuthenticator(context, log=logging.getLogger(__name__ + ".zap"))
        self._auth.start()
        self._auth.configure_curve_callback(domain="*", credentials_provider=self)

    def callback(self, domain: str, key: bytes) -> bool:
        """ZAP asks: may this public key connect? Unknown keys are counted and refused."""
        if key in self.allowed:
            return True
        self.refused += 1
        self.limiter.log(
            "refused key",
            logging.WARNING,
            "refused a connection with unknown key %s (%d refused so far)",
            fingerprint(key),
            self.refused,
        )
        return False

    def stop(self) -> None:
        self._auth.stop()


def make_server(sock: zmq.Socket, pair: KeyPair) -> None:
    """Make ``sock`` a CURVE server with ``pair`` (before it binds or connects)."""
    sock.curve_secretkey = pair.secret
    sock.curve_publickey = pair.public
    sock.curve_server = True


def make_client(sock: zmq.Socket, pair: KeyPair, server_public: bytes) -> None:
    """Make ``sock`` a CURVE client of the server whose public key is ``server_public``."""
    sock.curve_secretkey = pair.secret
    sock.curve_publickey = pair.public
    sock.curve_serverkey = server_public


def use_ipv6(sock: zmq.Socket, address: str) -> None:
    """Let ``sock`` bind or connect to an IPv6 address such as ``tcp://[::1]:5555``. Only for
    bracketed hosts: with IPv6 on, libzmq reports an IPv4 endpoint as ``[::ffff:127.0.0.1]``."""
    if "[" in address.partition("://")[2]:
        sock.setsockopt(zmq.IPV6, 1)


def is_loopback(address: str) -> bool:
    """True when a ZeroMQ address reaches this host only: tcp to loopback, ipc, inproc."""
    transport, sep, rest = address.partition("://")
    if not sep:
        return False
    if transport in ("ipc", "inproc"):
        return True
    if transport != "tcp":
        return False
    host = rest.rsplit(":", 1)[0]
    if ";" in host:  # tcp://source;destination: the destination decides
        host = host.split(";", 1)[1]
    host = host.strip("[]")
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False  # '*', an interface name or a host name: may be reachable from outside
