"""A simulated Keysight 34465A bench meter: real SCPI over a real TCP socket.

This module is the meter's command set: the 34465A's commands and their handlers, the error
queue and the TCP server; the SCPI syntax they share (header forms, numbers, error codes) is
:mod:`hilbench.sim.scpi_syntax`. What it reads and when (device power, trigger, sample
timing, drift, reading memory) is the acquisition model in
:mod:`hilbench.sim.meter_acquisition`; because the device's true power is known there, the
meter can answer what the true energy of any window was.

Reach it with pyvisa-py as ``TCPIP::127.0.0.1::<port>::SOCKET`` (newline termination). It
speaks the subset of the 34465A's SCPI that the hilbench driver uses, plus non-standard
``SIMulate`` commands for the simulated device and the tests:

- ``SIMulate:STATe <name>[,<t>]``: the device entered a state at ``t`` (bench clock; default
  on arrival);
- ``SIMulate:HOLD <t>``: the device has told its state up to ``t`` and may tell later changes
  late; readings ending after ``t`` wait (see :mod:`hilbench.sim.meter_acquisition`);
- ``SIMulate:LIVE``: the device reports as things happen again;
- ``SIMulate:LATE?``: how many readings were computed from a timeline told late (0 when the
  simulation was honest);
- ``SIMulate:TRUTH? <t0>,<t1>``: true mean power in watts over a window on the bench clock;
- ``SIMulate:SYNChronise?``: ``1`` once every line sent before it on the connection has been
  acted on (the device link waits for it after each live change, so a device that says it is
  done has already told the meter).

Faults can be injected to test how the measurement chain copes: SCPI errors, a stalled
instrument, commands parsed late, dropped connections, and reading-memory overflow (small
``memory_readings``).
"""

from __future__ import annotations

import bisect
import contextlib
import math
import socket
import socketserver
import threading
import time
from collections import deque
from collections.abc import Callable

# The meter shares the bench's physical clock with the devices it measures (never offset).
from hilbench.clock import bench_now as now
from hilbench.sim.instrument_facts import meter_facts
from hilbench.sim.line_inbox import LineInbox
from hilbench.sim.meter_acquisition import (
    QUES_MEMORY_OVERFLOW,
    MeterAcquisition,
    MeterSettings,
)
from hilbench.sim.power_model import ARDUINO_NANO_33_BLE, DevicePowerModel
from hilbench.sim.scpi_syntax import (
    NODES,
    ScpiError,
    format_reading,
    normalise_header,
    one_arg,
    parse_bool,
    parse_number,
)

IDN = "Keysight Technologies,34465A,SIM0000001,hilbench-sim"
ERROR_QUEUE_LENGTH = 20


class SimulatedMeter(MeterAcquisition):
    """A threaded TCP server behaving like a Keysight 34465A measuring a simulated device.

    ``start()`` binds (port 0 picks a free one) and returns the port; ``stop()`` closes every
    connection. The device's state timeline is fed with :meth:`set_state` or, from another
    process, with ``SIMulate:STATe <name>`` on any connection; both are stamped with
    :func:`hilbench.clock.now` so that readings and ground truth share the driver's clock.
    """

    def __init__(
        self,
        model: DevicePowerModel = ARDUINO_NANO_33_BLE,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        noise_std_w: float = 0.0,
        memory_readings: int = 50_000,
        line_frequency_hz: float = 50.0,
        shunt_ohms: float = 0.1,
        initial_state: str = "idle",
        seed: int | None = None,
        drift_ppm: float = 0.0,
        gain_error: float = 0.0,
        offset_error: float = 0.0,
        trigger_latency_s: float = 1e-6,
        options: tuple[str, ...] = ("DIG", "MEM"),
    ) -> None:
        super().__init__(
            model, noise_std_w=noise_std_w, memory_readings=memory_readings,
            line_frequency_hz=line_frequency_hz, shunt_ohms=shunt_ohms,
            initial_state=initial_state, seed=seed, drift_ppm=drift_ppm, gain_error=gain_error,
            offset_error=offset_error, trigger_latency_s=trigger_latency_s,
        )
        self.options = tuple(options)  # what *OPT? reports: DIG allows NPLC 0.001-0.006
        from hilbench.wire.keys import is_loopback

        if not is_loopback(f"tcp://{host}:0"):
            raise ValueError(
                f"the simulated meter listens on loopback only, not {host!r}: it has no "
                "authentication, and its SIM: commands steer the readings"
            )
        self.host = host
        self._requested_port = port
        self._errors: deque[tuple[int, str]] = deque()
        self._pending_errors: list[tuple[str, int, str]] = []
        self._stalled = threading.Event()
        self._late: dict[str, float] = {}  # header -> seconds each arrival waits to be parsed
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self._connections: set[socket.socket] = set()
        self._links: set[LineInbox] = set()  # connections that have told a device's state
        self._local = threading.local()  # the serving thread's own connection (its inbox)

    # --- lifecycle -------------------------------------------------------------------------

    def start(self) -> int:
        """Begin serving in a background thread; returns the TCP port."""
        if self._server is not None:
            return self.port
        self._stopping.clear()
        self._server = _Server((self.host, self._requested_port), _Handler, meter=self)
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.05},
            name=f"simulated-meter:{self.port}",
            daemon=True,
        )
        self._thread.start()
        return self.port

    def stop(self) -> None:
        """Stop serving and close every client connection."""
        if self._server is None:
            return
        self._stopping.set()
        self._server.shutdown()
        self.drop_connections()
        self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._server = None
        self._thread = None

    def __enter__(self) -> SimulatedMeter:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        if self._server is None:
            raise RuntimeError("the simulated meter is not running; call start() first")
        return int(self._server.server_address[1])

    @property
    def resource(self) -> str:
        """The VISA resource string pyvisa-py opens this meter with."""
        return f"TCPIP::{self.host}::{self.port}::SOCKET"

    # --- fault injection -------------------------------------------------------------------

    def inject_error(self, message: str, code: int = -200, on_command: str | None = None) -> None:
        """Put an error into the SCPI error queue, now or when ``on_command`` next arrives."""
        with self._lock:
            if on_command is None:
                self._push_error(code, message)
            else:
                self._pending_errors.append((normalise_header(on_command), code, message))

    def stall(self) -> None:
        """Stop answering anything (a hung instrument); clients then time out."""
        self._stalled.set()

    def resume(self) -> None:
        self._stalled.clear()

    def parse_late(self, command: str, seconds: float) -> None:
        """Parse ``command`` ``seconds`` after it arrives, as a meter behind a loaded host does."""
        self._late[normalise_header(command)] = seconds

    def drop_connections(self) -> None:
        """Close every client connection abruptly, as a power-cycled or unplugged meter does."""
        with self._lock:
            connections = list(self._connections)
        for conn in connections:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)
            conn.close()

    def _news_pending(self) -> bool:
        """Whether a device link other than the asking connection has a line not yet acted
        on (see :mod:`hilbench.sim.line_inbox`)."""
        own = getattr(self._local, "inbox", None)
        return any(link.pending() for link in self._links if link is not own)

    # --- SCPI ------------------------------------------------------------------------------

    def execute(self, line: str) -> str | None:
        """Run one line of SCPI (``;``-separated commands); returns the reply, if any."""
        replies: list[str] = []
        for part in line.split(";"):
            part = part.strip()
            if not part:
                continue
            reply = self._execute_one(part)
            if reply is not None:
                replies.append(reply)
        return ";".join(replies) if replies else None

    def _execute_one(self, command: str) -> str | None:
        header, _, arg_text = command.partition(" ")
        args = [a.strip() for a in arg_text.split(",")] if arg_text.strip() else []
        if self._late:  # fault injection only: no second header parse on every command
            with contextlib.suppress(ScpiError):
                time.sleep(self._late.get(normalise_header(header), 0.0))
        with self._lock:
            try:
                key = normalise_header(header)
                self._fire_pending_errors(key)
                handler = _COMMANDS.get(key)
                if handler is None:
                    raise ScpiError(-113, "Undefined header")
                return handler(self, args)
            except ScpiError as err:
                self._push_error(err.code, err.message)
                return None

    def _fire_pending_errors(self, key: str) -> None:
        for pending in list(self._pending_errors):
            if pending[0] == key:
                self._pending_errors.remove(pending)
                self._push_error(pending[1], pending[2])

    def _push_error(self, code: int, message: str) -> None:
        if len(self._errors) >= ERROR_QUEUE_LENGTH:
            self._errors[-1] = (-350, "Error queue overflow")
        else:
            self._errors.append((code, message))

    # --- command handlers (called with the lock held) --------------------------------------

    def _idn(self, args: list[str]) -> str:
        return IDN

    def _rst(self, args: list[str]) -> None:
        self._abort([])
        self._settings = MeterSettings()
        self._memory.clear()
        self._acq = None

    def _cls(self, args: list[str]) -> None:
        self._errors.clear()
        self._ques_event = 0

    def _opc(self, args: list[str]) -> str:
        return "1"

    def _trigger_slope(self, args: list[str]) -> None:
        value = one_arg(args).upper()
        slope = {"POSITIVE": "POS", "NEGATIVE": "NEG"}.get(value, value)
        if slope not in ("POS", "NEG"):
            raise ScpiError(-224, "Illegal parameter value")
        self._settings.trigger_slope = slope

    def _simulate_marker(self, args: list[str]) -> None:
        # SIM:MARK <level>[,<t>]: the device's marker pin, wired to the Ext Trig input.
        level = int(parse_number(one_arg(args[:1]), 0, 1))
        t = parse_number(args[1], -math.inf, math.inf) if len(args) > 1 else now()
        self._external_edge(t, level)

    def _nothing(self, args: list[str]) -> None:
        return None

    def _system_error(self, args: list[str]) -> str:
        code, message = self._errors.popleft() if self._errors else (0, "No error")
        return f'{code:+d},"{message}"'

    def _line_frequency(self, args: list[str]) -> str:
        return f"{self.line_frequency_hz:+.0f}"

    def _function(self, args: list[str]) -> None:
        name = one_arg(args).strip("\"'").upper()
        function = NODES.get(name.split(":")[0])
        if function not in ("CURR", "VOLT"):
            raise ScpiError(-224, "Illegal parameter value")
        self._settings.function = function

    def _function_query(self, args: list[str]) -> str:
        return f'"{self._settings.function}"'

    def _trigger_source(self, args: list[str]) -> None:
        value = one_arg(args).upper()
        source = {"IMMEDIATE": "IMM", "EXTERNAL": "EXT", "INTERNAL": "INT"}.get(value, value)
        if source not in ("IMM", "BUS", "EXT", "INT"):
            raise ScpiError(-224, "Illegal parameter value")
        self._settings.trigger_source = source

    def _trigger_delay(self, args: list[str]) -> None:
        self._settings.trigger_delay_s = parse_number(one_arg(args), 0.0, 3600.0, default=0.0)

    def _trigger_count(self, args: list[str]) -> None:
        self._settings.trigger_count = int(parse_number(one_arg(args), 1, 1e9, default=1))

    def _trigger(self, args: list[str]) -> None:
        self._bus_trigger()

    def _sample_source(self, args: list[str]) -> None:
        value = one_arg(args).upper()
        source = {"IMMEDIATE": "IMM", "TIMER": "TIM"}.get(value, value)
        if source not in ("IMM", "TIM"):
            raise ScpiError(-224, "Illegal parameter value")
        self._settings.sample_source = source

    def _sample_timer(self, args: list[str]) -> None:
        value = one_arg(args).upper()
        minimum = self._min_interval()
        if value.startswith("MIN"):
            self._settings.sample_timer_s = minimum
            return
        interval = parse_number(value, 0.0, 3600.0, default=1.0)
        if interval < minimum:
            raise ScpiError(-222, "Data out of range; sample timer below minimum")
        self._settings.sample_timer_s = round(interval, 6)  # 1 µs steps

    def _sample_timer_query(self, args: list[str]) -> str:
        if args and args[0].upper().startswith("MIN"):
            return f"{self._min_interval():+.8E}"
        return f"{self._settings.sample_timer_s:+.8E}"

    def _sample_count(self, args: list[str]) -> None:
        self._settings.sample_count = int(parse_number(one_arg(args), 1, 1e9, default=1))

    def _sample_count_query(self, args: list[str]) -> str:
        return f"{self._settings.sample_count:+d}"

    def _initiate(self, args: list[str]) -> None:
        t_init = now()
        self._advance(t_init)
        if self._acq is not None and self._acq.taking_readings(t_init):
            raise ScpiError(-213, "Init ignored")
        self._start_acquisition(t_init)

    def _abort(self, args: list[str]) -> None:
        self._abort_acquisition()

    def _fetch(self, args: list[str]) -> str:
        acq = self._acq
        if acq is None:
            raise ScpiError(-230, "Data stale")
        self._wait_until(lambda: acq.finished)
        return ",".join(format_reading(v) for v in self._memory)

    def _read_and_erase(self, args: list[str]) -> str:
        self._catch_up()
        limit = len(self._memory) if not args else int(parse_number(args[0], 1, 2e9))
        data = ",".join(format_reading(v) for v in self._take(limit))
        return f"#{len(str(len(data)))}{len(data)}{data}"

    def _data_remove(self, args: list[str]) -> str:
        if not args:
            raise ScpiError(-109, "Missing parameter")
        count = int(parse_number(args[0], 1, 2e9))
        wait = len(args) > 1 and args[1].upper() == "WAIT"
        self._catch_up()
        if len(self._memory) < count:
            if not wait:
                raise ScpiError(-222, "Data out of range; not enough readings in memory")
            acq = self._acq
            self._wait_until(lambda: len(self._memory) >= count or acq is None or acq.finished)
        return ",".join(format_reading(v) for v in self._take(count))

    def _data_points(self, args: list[str]) -> str:
        self._catch_up()
        return f"{len(self._memory):+d}"

    def _questionable_event(self, args: list[str]) -> str:
        self._catch_up()
        value, self._ques_event = self._ques_event, 0
        return f"{value:+d}"

    def _questionable_condition(self, args: list[str]) -> str:
        self._catch_up()
        overflow = self._acq is not None and self._acq.lost > 0
        return f"{QUES_MEMORY_OVERFLOW if overflow else 0:+d}"

    def _simulate_state(self, args: list[str]) -> None:
        # SIM:STAT <name>[,<t>]: t is when the device changed state, on the monotonic clock the
        # simulated device shares with this meter (both run on one host); default: on arrival.
        name = one_arg(args).strip("\"'")
        t = parse_number(args[1], -math.inf, math.inf) if len(args) > 1 else None
        try:
            self.set_state(name, t)
        except (KeyError, ValueError):
            raise ScpiError(-224, f"Illegal parameter value; unknown state {name}") from None

    def _simulate_hold(self, args: list[str]) -> None:
        # SIM:HOLD <t>: the device's state is told up to t (bench clock); later changes may
        # arrive late, so readings ending after t are not computed until it tells more.
        self.hold(parse_number(one_arg(args), -math.inf, math.inf))

    def _simulate_live(self, args: list[str]) -> None:
        self.live()

    def _simulate_late_query(self, args: list[str]) -> str:
        return f"{self.late_readings:+d}"

    def _simulate_state_query(self, args: list[str]) -> str:
        return f'"{self._timeline.state_at(now())}"'

    def _simulate_truth(self, args: list[str]) -> str:
        if len(args) != 2:
            raise ScpiError(-109, "Missing parameter; expected <t0>,<t1>")
        t0, t1 = (parse_number(a, -math.inf, math.inf) for a in args)
        if t1 <= t0:
            raise ScpiError(-222, "Data out of range; empty window")
        return f"{self.true_mean_power(t0, t1):+.9E}"


def _pick_range(function: str, value: str) -> float:
    """The smallest range that holds ``value``, as the instrument selects it."""
    # The ranges are the instrument plugin's (hilbench.sim.instrument_facts).
    facts = meter_facts()
    ranges = facts.current_ranges_a if function == "CURR" else facts.voltage_ranges_v
    wanted = abs(parse_number(value, -ranges[-1], ranges[-1], default=ranges[-1]))
    i = bisect.bisect_left(ranges, wanted * (1 - 1e-9))
    return ranges[min(i, len(ranges) - 1)]


def _pick_nplc(value: str) -> float:
    """The smallest allowed NPLC setting not below ``value`` (the instrument rounds up)."""
    settings = sorted(meter_facts().nplc_resolution_ppm)
    wanted = parse_number(value, settings[0], settings[-1], default=10.0)
    i = bisect.bisect_left(settings, wanted * (1 - 1e-9))
    return settings[min(i, len(settings) - 1)]


_Handler_t = Callable[[SimulatedMeter, list[str]], "str | None"]


def _configure_handler(function: str) -> _Handler_t:
    def handler(meter: SimulatedMeter, args: list[str]) -> None:
        meter._abort([])
        meter._settings.function = function
        meter._settings.trigger_source = "IMM"
        meter._settings.trigger_count = 1
        meter._settings.sample_source = "IMM"
        meter._settings.sample_count = 1
        fn = meter._settings.functions[function]
        if args and args[0].upper() not in ("AUTO", "DEF"):
            fn.range = _pick_range(function, args[0])
            fn.autorange = False
        else:
            fn.autorange = True

    return handler


def _set_range_handler(function: str) -> _Handler_t:
    def handler(meter: SimulatedMeter, args: list[str]) -> None:
        fn = meter._settings.functions[function]
        fn.range = _pick_range(function, one_arg(args))
        fn.autorange = False

    return handler


def _get_range_handler(function: str) -> _Handler_t:
    return lambda meter, args: f"{meter._settings.functions[function].range:+.8E}"


def _set_autorange_handler(function: str) -> _Handler_t:
    def handler(meter: SimulatedMeter, args: list[str]) -> None:
        meter._settings.functions[function].autorange = parse_bool(one_arg(args))

    return handler


def _get_autorange_handler(function: str) -> _Handler_t:
    return lambda meter, args: str(int(meter._settings.functions[function].autorange))


def _set_nplc_handler(function: str) -> _Handler_t:
    def handler(meter: SimulatedMeter, args: list[str]) -> None:
        nplc = _pick_nplc(one_arg(args))
        if nplc < 0.02 and "DIG" not in meter.options:
            raise ScpiError(-221, "Settings conflict; NPLC below 0.02 needs the DIG option")
        meter._settings.functions[function].nplc = nplc

    return handler


def _get_nplc_handler(function: str) -> _Handler_t:
    return lambda meter, args: f"{meter._settings.functions[function].nplc:+.8E}"


def _set_autozero_handler(function: str) -> _Handler_t:
    def handler(meter: SimulatedMeter, args: list[str]) -> None:
        value = one_arg(args).upper()
        meter._settings.functions[function].autozero = (
            False if value == "ONCE" else parse_bool(value)
        )

    return handler


def _get_autozero_handler(function: str) -> _Handler_t:
    return lambda meter, args: str(int(meter._settings.functions[function].autozero))


_M = SimulatedMeter
_COMMANDS: dict[str, _Handler_t] = {
    "*IDN?": _M._idn,
    "*RST": _M._rst,
    "*CLS": _M._cls,
    "*OPC?": _M._opc,
    "*OPT?": lambda m, args: ",".join(m.options) or "0",
    "*OPC": _M._nothing,
    "*WAI": _M._nothing,
    "*TRG": _M._trigger,
    "SYST:ERR?": _M._system_error,
    "SYST:LFR?": _M._line_frequency,
    "FUNC": _M._function,
    "FUNC?": _M._function_query,
    "TRIG:SOUR": _M._trigger_source,
    "TRIG:SLOP": _M._trigger_slope,
    "TRIG:SLOP?": lambda m, args: m._settings.trigger_slope,
    "TRIG:DEL": _M._trigger_delay,
    "TRIG:COUN": _M._trigger_count,
    "SAMP:SOUR": _M._sample_source,
    "SAMP:TIM": _M._sample_timer,
    "SAMP:TIM?": _M._sample_timer_query,
    "SAMP:COUN": _M._sample_count,
    "SAMP:COUN?": _M._sample_count_query,
    "INIT": _M._initiate,
    "ABOR": _M._abort,
    "FETC?": _M._fetch,
    "R?": _M._read_and_erase,
    "DATA:REM?": _M._data_remove,
    "DATA:POIN?": _M._data_points,
    "STAT:QUES?": _M._questionable_event,
    "STAT:QUES:COND?": _M._questionable_condition,
    "SIM:STAT": _M._simulate_state,
    "SIM:MARK": _M._simulate_marker,
    "SIM:STAT?": _M._simulate_state_query,
    "SIM:HOLD": _M._simulate_hold,
    "SIM:LIVE": _M._simulate_live,
    "SIM:LATE?": _M._simulate_late_query,
    "SIM:SYNC?": lambda m, args: "1",
    "SIM:TRUTH?": _M._simulate_truth,
}
for _fn in ("CURR", "VOLT"):
    _COMMANDS.update(
        {
            f"CONF:{_fn}": _configure_handler(_fn),
            f"{_fn}:RANG": _set_range_handler(_fn),
            f"{_fn}:RANG?": _get_range_handler(_fn),
            f"{_fn}:RANG:AUTO": _set_autorange_handler(_fn),
            f"{_fn}:RANG:AUTO?": _get_autorange_handler(_fn),
            f"{_fn}:NPLC": _set_nplc_handler(_fn),
            f"{_fn}:NPLC?": _get_nplc_handler(_fn),
            f"{_fn}:ZERO:AUTO": _set_autozero_handler(_fn),
            f"{_fn}:ZERO:AUTO?": _get_autozero_handler(_fn),
        }
    )


class _Server(socketserver.ThreadingTCPServer):
    allow_reuse_address = True
    daemon_threads = True

    def __init__(self, address: tuple[str, int], handler: type, *, meter: SimulatedMeter):
        self.meter = meter
        super().__init__(address, handler)


class _Handler(socketserver.BaseRequestHandler):
    """One client connection: newline-terminated SCPI lines in, newline-terminated replies out.

    A connection that tells a device's state (``SIM:STAT``, ``SIM:HOLD``, …) is one of the
    meter's device links: while a line of it is unread, a live device's readings wait
    (:meth:`SimulatedMeter._news_pending`)."""

    server: _Server

    def handle(self) -> None:
        meter = self.server.meter
        self.request.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        inbox = LineInbox(self.request)
        meter._local.inbox = inbox  # its own lines never hold its own requests
        with meter._lock:
            meter._connections.add(self.request)
        try:
            while (raw := inbox.next_line(meter._stopping.is_set)) is not None:
                try:
                    if raw[:4].upper() == b"SIM:" and inbox not in meter._links:
                        with meter._lock:
                            meter._links.add(inbox)
                    if meter._stalled.is_set() and not raw.startswith(b"SIM:"):
                        continue  # a hung instrument neither acts nor answers (the device's
                        # own lines still arrive: its current does not stop when the meter hangs)
                    reply = meter.execute(raw.decode("ascii", errors="replace"))
                finally:
                    inbox.done()
                if reply is not None:
                    try:
                        self.request.sendall(reply.encode("ascii") + b"\n")
                    except OSError:
                        return
        finally:
            with meter._lock:
                meter._connections.discard(self.request)
                meter._links.discard(inbox)
