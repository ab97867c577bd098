"""How a simulated device tells the simulated bench meter what it is doing.

A driver running against the simulated bench opens this link to the meter's SCPI port and sends
``SIMulate:STATe <name>,<t>`` for each change (idle, preprocessing, inference, solving), stamped
``t`` on the bench clock the device shares with the meter when it happened, so the meter's
readings follow what the device really did, when it did it, whenever the line arrives.

A change told through :meth:`SimulatedDeviceLink.state` goes out at once. Changes told through
:meth:`SimulatedDeviceLink.defer` (single-stream samples) are batched, and the link *holds* the
meter meanwhile: ``SIMulate:HOLD <t>`` says the state is told up to ``t`` and later changes may
arrive late, so the meter computes only readings that end by ``t`` (as if the instrument had
that much latency) instead of reading an idle device from a timeline not told yet.
``SIMulate:LIVE`` lifts the hold: the device reports as things happen again. Writes:

- the first deferred changes while live: their ``SIM:STAT`` lines, then ``SIM:HOLD <now>``
  (or, for a device that stamps its samples' starts with :meth:`~SimulatedDeviceLink.begin`,
  ``SIM:HOLD <now>`` just before the first sample's start is stamped, so not even that sample
  is read stale);
- while holding, nothing until ``MAX_DEFERRED`` changes wait or ``FLUSH_S`` has passed since
  the last write; then the waiting lines and a new ``SIM:HOLD <now>``;
- :meth:`~SimulatedDeviceLink.state`: the waiting lines, the new state (and ``SIM:LIVE`` while
  holding), then ``SIM:SYNC?``, whose answer it waits for; :meth:`~SimulatedDeviceLink.close`:
  the waiting lines and ``SIM:LIVE``;
- a device that stamps its samples' starts with :meth:`~SimulatedDeviceLink.begin` lets the
  link tell on its own when it falls quiet: ``FLUSH_S`` after the last deferred sample, the
  waiting lines and ``SIM:LIVE`` (during a sample that outlasts ``FLUSH_S``: the waiting lines
  and ``SIM:HOLD <its start>``), so a meter stopped after a run of samples need not wait for
  the device's next request to hear that it sat idle.

Each is one write. A HOLD's stamp is read after every change it follows was stamped (and under
the lock :meth:`~SimulatedDeviceLink.begin` stamps with), so everything up to it is told.
"""

from __future__ import annotations

import socket
import threading

from hilbench.clock import bench_now

MAX_DEFERRED = 3 * 256  # state changes held back at most (256 single-stream samples)
# Longest a held meter goes without news of deferred changes while they keep coming: readings
# lag the device by this (plus one sample) at most, well inside the keysight driver's reading
# memory (10 s at its shortest interval) and its drain period, while the meter process is woken
# 20 times a second instead of once per sample (2 000-5 000 times a second in single stream).
FLUSH_S = 0.05


def meter_addresses(address: str) -> list[tuple[str, int]]:
    """``host:port`` of each simulated meter in ``address``: one, or several separated by
    commas when more than one simulated instrument measures the device (each hears every
    change, as two instruments on one supply line see the same current)."""
    out = []
    for part in address.split(","):
        host, _, port = part.strip().rpartition(":")
        if not host or not port.isdigit():
            raise ValueError(f"simulated meter address must be host:port[,host:port…], got "
                             f"{address!r}")
        out.append((host, int(port)))
    return out


class SimulatedDeviceLink:
    """TCP connections to the :class:`hilbench.sim.SimulatedMeter` (or meters) measuring a
    device, for reporting its state changes: every write goes to each."""

    def __init__(self, address: str, timeout_s: float = 5.0) -> None:
        targets = meter_addresses(address)
        self.address = address
        self._socks: list[socket.socket] = []
        try:
            for host, port in targets:
                sock = socket.create_connection((host, port), timeout=timeout_s)
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                self._socks.append(sock)
        except OSError:
            for sock in self._socks:
                sock.close()
            raise
        self._lock = threading.Lock()
        self._deferred: list[tuple[str, float]] = []
        self._holding = False
        self._last_write = 0.0  # bench clock of the last write
        self._last_defer = 0.0  # bench clock of the last defer()
        self._told = 0.0  # the last HOLD's stamp
        self._busy_since: float | None = None  # begin() of a sample not deferred yet
        self._begins = False  # the device stamps its samples' starts with begin()
        self._quiet = threading.Event()  # set by close(): the flusher ends
        self._flusher: threading.Thread | None = None
        self.writes = 0  # writes to the meter so far: what deferral saves is counted here

    def state(self, name: str, t: float | None = None, marker: int | None = None) -> None:
        """Report that the device entered state ``name`` at ``t`` (default: now), on the
        monotonic clock it shares with the meter: stamping on arrival would add the meter's
        own latency to every state change. Deferred changes go first, in the same write, and a
        held meter is released (``SIM:LIVE``): from here on the device reports as it goes.
        It returns once every meter has acted on the change (``SIM:SYNC?``): whatever the
        device does next (tell its caller the work is done, so the caller stops the meter)
        reaches a meter that already knows, as a real device's current changes at once.
        ``marker``: the level (0/1) the device's marker pin took at the same moment, told in
        the same write (``SIM:MARK``)."""
        with self._lock:
            stamp = bench_now() if t is None else t
            marks = [] if marker is None else [(int(marker), stamp)]
            self._send([*self._deferred, (name, stamp)], live=self._holding, marks=marks,
                       sync=True)

    def marker(self, level: int, t: float | None = None) -> None:
        """Report that the device's marker pin went to ``level`` (0 or 1) at ``t`` (default
        now): the line an instrument records in its own sample stream. Deferred changes go
        first, in the same write; a held meter stays held."""
        with self._lock:
            stamp = bench_now() if t is None else t
            text = "".join(f"SIM:STAT {name},{when!r}\n" for name, when in self._deferred)
            self._deferred = []
            self._last_write = bench_now()
            self.writes += 1
            self._write(f"{text}SIM:MARK {int(level)},{stamp!r}\n")

    def begin(self) -> float:
        """Now on the bench clock, as the stamp of a sample's first change (told later with
        :meth:`defer`). Taken under the link's lock, so no HOLD passes it before the sample's
        changes are told. A live meter is held first (the one write of a run's start), and
        the stamp is read after that write: the meter either computed its readings before the
        HOLD was on its socket (so before the sample began) or finds the HOLD there and waits
        for it (:meth:`hilbench.sim.meter.SimulatedMeter._news_pending`). The link may lift the
        hold on its own once the device falls quiet."""
        with self._lock:
            self._begins = True
            if not self._holding:
                self._send(self._deferred, hold=True)
            t = bench_now()
            if self._busy_since is None:
                self._busy_since = t
            return t

    def defer(self, changes: list[tuple[str, float]]) -> None:
        """Stamped changes told in batches, with the meter held meanwhile (see the module).

        For single-stream samples: a write per sample woke the meter's process between two
        samples, and the next sample paid for it (on a 2-core VM: 80 µs more between samples
        and +10 % pre-processing time). A power window may run single stream too, so the
        meter is held rather than left reading a timeline not told yet.
        """
        with self._lock:
            self._deferred.extend(changes)
            self._busy_since = None
            t = self._last_defer = bench_now()
            if (self._holding and len(self._deferred) < MAX_DEFERRED
                    and t - self._last_write < FLUSH_S):
                return
            self._send(self._deferred, hold=True)

    def _flush_when_quiet(self) -> None:
        """While the meter is held: once no sample has been deferred for ``FLUSH_S``, tell
        what waits and lift the hold (or, during a long sample, hold at its start)."""
        while True:
            self._quiet.wait(FLUSH_S)
            with self._lock:
                if self._quiet.is_set() or not self._holding:
                    self._flusher = None
                    return
                t = bench_now()
                if t - self._last_defer < FLUSH_S or t - self._last_write < FLUSH_S:
                    continue
                try:
                    if self._busy_since is None:
                        self._send(self._deferred, live=True)
                    elif self._deferred or self._busy_since > self._told:
                        self._send(self._deferred, hold=True, told=self._busy_since)
                except OSError:
                    self._holding = False  # the meter is gone: nobody to tell

    def _send(self, changes: list[tuple[str, float]], *, hold: bool = False,
              live: bool = False, told: float | None = None,
              marks: list[tuple[int, float]] | None = None, sync: bool = False) -> None:
        """One write (lock held): ``changes`` and ``marks`` (marker levels), then HOLD (at
        ``told``, default now) or LIVE; with ``sync``, wait until each meter has acted on it."""
        text = "".join(f"SIM:STAT {name},{stamp!r}\n" for name, stamp in changes)
        text += "".join(f"SIM:MARK {level},{stamp!r}\n" for level, stamp in marks or ())
        t = bench_now()  # after every change above was stamped
        if hold:
            self._told = t if told is None else told
            text += f"SIM:HOLD {self._told!r}\n"
        elif live:
            text += "SIM:LIVE\n"
        self._deferred = []
        self._holding = hold
        self._last_write = t
        self.writes += 1
        if sync:
            text += "SIM:SYNC?\n"
        self._write(text)
        if sync:
            self._await_sync()
        if hold and self._begins and self._flusher is None and not self._quiet.is_set():
            self._flusher = threading.Thread(target=self._flush_when_quiet, daemon=True,
                                             name=f"sim-link-flusher:{self.address}")
            self._flusher.start()

    def close(self) -> None:
        self._quiet.set()
        with self._lock:
            try:
                if self._deferred or self._holding:
                    self._send(self._deferred, live=True)
            except OSError:
                pass  # the meter is gone: nobody to tell
            finally:
                self._deferred = []
                self._holding = False
                for sock in self._socks:
                    sock.close()

    def _write(self, text: str) -> None:
        data = text.encode()
        for sock in self._socks:
            sock.sendall(data)

    def _await_sync(self) -> None:
        """Each meter's answer to ``SIM:SYNC?``: it handles a connection's lines in order, so
        everything written before it has been acted on (the socket's timeout bounds the wait)."""
        for sock in self._socks:
            reply = b""
            while not reply.endswith(b"\n"):
                chunk = sock.recv(64)
                if not chunk:
                    raise ConnectionError(f"the simulated meter at {self.address} closed the "
                                          "link while the device was telling it a change")
                reply += chunk


def relink(previous: SimulatedDeviceLink | None, address: str) -> SimulatedDeviceLink:
    """A driver's new link to the meter at ``address`` (``configure {sim_meter}``), the previous
    one closed; a meter it cannot reach is the request's fault, named by its key."""
    from hilbench.agent.driver import DriverError

    try:
        link = SimulatedDeviceLink(address)
    except (OSError, ValueError) as exc:
        raise DriverError(f"cannot reach the simulated meter at {address}: {exc}",
                          "bad_arguments", key="sim_meter") from exc
    if previous is not None:
        previous.close()
    return link
