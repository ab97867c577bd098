"""The `arduino` driver: an Arduino Nano 33 BLE running firmware/hilbench_asc, over pyserial.

ASC only, one sample in device memory at a time (shared contract 2, ``sample_capacity`` 1):
``load part=model`` checks that the board was built with the campaign's model (fingerprint);
``load part=sample`` sends one 1 s sample as int16 PCM (or int8 features); ``run single_stream``
and ``run repeat`` return the board's own µs timings in seconds. Options (``[[agents]] options``):

``port``     a serial device path; ``"auto"`` (default): the one board with USB VID:PID
             2341:805A; ``"emulate"``: start the firmware's host build on a pseudo-terminal
``baud``     115200 (USB CDC ignores it; a UART bridge does not)
``timeout_s`` seconds to wait for an ordinary reply (default 2)
``sim_meter`` host:port of the simulated bench meter (set by the orchestrator); with
             ``port = "emulate"`` the host build's marker drives the meter's power model

With ``port = "emulate"`` a ``load part=model`` whose model differs from the host build's
"flashes" the emulated board: the host build is compiled for that model (once, cached) and
restarted. A real board is never reflashed by the driver: a mismatch is refused.

A board reset during a run (boot banner) fails that request with ``device_reset``: the run is
invalid and the board is identified again before the next request.
"""

from __future__ import annotations

import logging
import threading
from typing import Any, ClassVar

import numpy as np

from hilbench.agent.driver import DriverError, DriverResult
from hilbench.clock import now
from hilbench_drivers.arduino.board import Board, Identity, audio_to_pcm16
from hilbench_drivers.arduino.discovery import resolve_port
from hilbench_drivers.arduino.link import BoardError, BoardReset, SerialLink
from hilbench_drivers.arduino.protocol import Kind, Stage

log = logging.getLogger(__name__)

STAGES = {"idle": Stage.IDLE, "preprocessing": Stage.PREPROCESSING, "inference": Stage.INFERENCE}
MAX_REPEAT_S = 3600.0
SIMULATION = (
    "the firmware's host build on a pseudo-terminal: the real protocol, MFE and int8 CNN code, "
    "timed by the host's clock, power from the simulated meter's arduino-nano-33-ble model"
)


class ArduinoDriver:
    """ASC on a Nano 33 BLE (or its host build) through the hilbench serial protocol."""

    name: ClassVar[str] = "arduino"

    def __init__(
        self,
        port: str = "auto",
        baud: int | str = 115200,
        timeout_s: float | str = 2.0,
        sim_meter: str | None = None,
    ) -> None:
        self.port_option = str(port)
        self.baud = int(baud)
        self.timeout_s = float(timeout_s)
        self.sim_meter = sim_meter
        self._board: Board | None = None
        self._emulator: Any = None
        self._meter_link: Any = None
        self._held: int | None = None
        self._held_kind: Kind | None = None

    # -- connection ---------------------------------------------------------------------------

    def _connect(self) -> Board:
        if self._board is not None:
            return self._board
        path = self.port_option
        if path == "emulate":
            path = self._start_emulator()
        else:
            try:
                path = resolve_port(path)
            except BoardError as exc:
                raise DriverError(str(exc), exc.code) from exc
        self._board = self._open_board(path)
        return self._board

    def _open_board(self, path: str) -> Board:
        try:
            link = SerialLink.open(path, self.baud, timeout_s=self.timeout_s)
            link.discard_input()  # a boot banner from before we opened is not a reset
            board = Board(link)
            board.identify()
        except BoardError as exc:
            raise DriverError(str(exc), exc.code) from exc
        return board

    def _close_board(self) -> None:
        board, self._board = self._board, None
        if board is not None:
            board.link.close()

    def _start_emulator(self) -> str:
        from hilbench_drivers.arduino.emulator import HostEmulator

        if self.sim_meter and self._meter_link is None:
            self.link_meter(self.sim_meter)
        try:
            # the meter may be linked later (``configure {sim_meter}``): report through it then
            self._emulator = HostEmulator(on_state=self._report_state)
            return self._emulator.start()
        except BoardError as exc:
            raise DriverError(str(exc), exc.code) from exc

    def link_meter(self, address: str) -> None:
        """Report the emulated board's state to the simulated bench meter at ``address``."""
        from hilbench.sim.device_link import relink

        self._meter_link = relink(self._meter_link, address)

    def _report_state(self, state: str, t: float | None = None) -> None:
        if self._meter_link is not None:
            self._meter_link.state(state, t)

    def _reflash_emulator(self, model: Any) -> Identity:
        """The emulated board's "flashing": restart the host build compiled with ``model``."""
        from hilbench_drivers.arduino.emulator import HostEmulator, host_build_for_model

        try:
            program = host_build_for_model(model)
        except BoardError as exc:
            raise DriverError(str(exc), exc.code) from exc
        on_state = self._emulator.on_state
        self._close_board()
        self._emulator.stop()
        self._emulator = HostEmulator(on_state=on_state, program=program)
        path = self._emulator.start()
        self._board = self._open_board(path)
        self._held = None
        return self._identity()

    def _identity(self) -> Identity:
        identity = self._connect().identity
        assert identity is not None
        return identity

    def _call(self, what: str, fn: Any) -> Any:
        """Run a board call; a reset forgets the held sample and re-identifies next time."""
        board = self._connect()
        try:
            return fn(board)
        except BoardReset as exc:
            self._held = None
            try:
                board.link.discard_input()
                board.identify()
            except BoardError:
                self._board = None
            raise DriverError(
                f"{exc} during {what}; the run is invalid (the board was identified again)",
                exc.code,
            ) from exc
        except BoardError as exc:
            if exc.code == "device_lost":  # unplugged or re-enumerated: reopen next time
                self._held = None
                try:
                    self._close_board()
                except Exception:  # the port is gone already
                    self._board = None
            raise DriverError(f"{what}: {exc}", exc.code) from exc

    # -- driver protocol ----------------------------------------------------------------------

    def capabilities(self) -> dict[str, Any]:
        identity = self._identity()
        caps: dict[str, Any] = {
            "workloads": ["asc"],
            "simulated": identity.simulated,
            # an emulated board's state can drive the simulated meter; a real one draws power
            "meter_link": identity.simulated,
            "board": identity.board,
            "firmware": identity.firmware,
            "protocol": identity.protocol,
            "port": self._connect().port,
            "asc": {
                "sample_capacity": identity.capacity,
                "modes": ["single_stream", "repeat"],
                "stages": [s for s in STAGES if s != "idle"],  # timed stages; repeat takes idle
                "stream_capacity": 0,  # no streams: the board holds one sample
                "max_repeat_s": MAX_REPEAT_S,
                "model_fingerprint": identity.model,
                "classes": list(identity.classes),
                "sample_rate": identity.sample_rate,
                "sample_formats": ["float32 audio (sent as int16 PCM)", "int8 features"],
            },
            "power": {
                "source": "external",
                "available": False,
                "reason": "the board has no power sensor: measure it with an instrument",
            },
        }
        if identity.simulated:
            caps["simulation"] = SIMULATION
        return caps

    def configure(self, params: dict[str, Any]) -> DriverResult:
        return DriverResult({"board": self._identity().board})

    def load(self, params: dict[str, Any], arrays: list[np.ndarray]) -> DriverResult:
        if params.get("workload") != "asc":
            raise DriverError(
                f"the arduino driver runs asc only, not {params.get('workload')!r}", "bad_arguments"
            )
        part = params.get("part")
        if part == "model":
            return DriverResult(self._check_model(params, arrays))
        if part == "sample":
            return DriverResult(self._load_sample(params, arrays))
        if part == "unload":
            index = _index(params)
            self._call("unload", lambda b: b.unload(index))
            self._held = None
            return DriverResult({"index": index, "held": []})
        raise DriverError(
            f"asc load part must be 'model', 'sample' or 'unload', got {part!r}", "bad_arguments"
        )

    def _check_model(self, params: dict[str, Any], arrays: list[np.ndarray]) -> dict[str, Any]:
        from hilbench.workloads.asc.quant import ModelFileError, QuantisedModel
        from hilbench_drivers.arduino.model_header import model_fingerprint

        names, meta = params.get("arrays"), params.get("meta")
        if not isinstance(names, list) or not isinstance(meta, dict) or len(names) != len(arrays):
            raise DriverError(
                "an asc model load needs 'meta' and 'arrays' naming each payload", "bad_arguments"
            )
        try:
            model = QuantisedModel.from_parts(meta, dict(zip(names, arrays, strict=True)))
        except (ModelFileError, ValueError, TypeError) as exc:
            raise DriverError(f"asc model rejected: {exc}", "bad_arguments") from exc
        identity = self._identity()
        fingerprint = model_fingerprint(model)
        reflashed = False
        if fingerprint != identity.model and self._emulator is not None:
            identity = self._reflash_emulator(model)
            reflashed = True
        if fingerprint != identity.model:
            raise DriverError(
                f"the board on {self._connect().port} was built with model {identity.model}; "
                f"the campaign's model is {fingerprint}. Regenerate the header from that model "
                "(python -m hilbench_drivers.arduino.model_header --model FILE) and reflash.",
                "bad_arguments",
            )
        if self._held is not None:  # loading a model drops any held sample (contract 2)
            held, self._held = self._held, None
            self._call("unload", lambda b: b.unload(held))
        return {
            "model_fingerprint": fingerprint,
            "built_in": True,
            "reflashed": reflashed,
            "classes": list(identity.classes),
            "input_frames": identity.frames,
            "input_filters": identity.filters,
            "sample_rate": identity.sample_rate,
            "weight_bytes": model.weight_bytes,
            "sample_capacity": identity.capacity,
        }

    def _load_sample(self, params: dict[str, Any], arrays: list[np.ndarray]) -> dict[str, Any]:
        index = _index(params)
        identity = self._identity()
        if len(arrays) != 1:
            raise DriverError("an asc sample load carries exactly one payload", "bad_arguments")
        sample = arrays[0]
        if sample.dtype == np.float32 and sample.size == identity.sample_count:
            kind, data = Kind.AUDIO_PCM16, audio_to_pcm16(sample.ravel())
        elif sample.dtype == np.int8 and sample.shape == (identity.frames, identity.filters):
            kind, data = Kind.FEATURES_INT8, np.ascontiguousarray(sample).tobytes()
        else:
            raise DriverError(
                f"an asc sample is float32 audio of {identity.sample_count} values "
                f"({identity.sample_rate} Hz, 1 s) or int8 features "
                f"({identity.frames}, {identity.filters}); got {sample.dtype}{list(sample.shape)}",
                "bad_arguments",
            )
        transfer_s = self._call(f"loading sample {index}", lambda b: b.load(index, kind, data))
        self._held, self._held_kind = index, kind
        return {
            "index": index,
            "held": [index],
            "capacity": identity.capacity,
            "bytes": len(data),
            "format": kind.name.lower(),
            "transfer_s": transfer_s,
        }

    def run(self, params: dict[str, Any], stop: threading.Event) -> DriverResult:
        if params.get("workload") != "asc":
            raise DriverError("the arduino driver runs asc only", "bad_arguments")
        mode = params.get("mode")
        if mode == "single_stream":
            return DriverResult(self._single_stream(_index(params)))
        if mode == "repeat":
            return DriverResult(self._repeat(params, stop))
        raise DriverError(
            f"asc mode must be 'single_stream' or 'repeat', got {mode!r}", "bad_arguments"
        )

    def _single_stream(self, index: int) -> dict[str, Any]:
        t_sent = now()
        result = self._call(f"running sample {index}", lambda b: b.run(index))
        t_end = now()
        device_s = ((result.preprocess_us or 0) + result.inference_us) * 1e-6
        body: dict[str, Any] = {
            "index": result.index,
            "predicted": result.predicted,
            "scores": result.logits,
            "preprocess_s": None if result.preprocess_us is None else result.preprocess_us * 1e-6,
            "inference_s": result.inference_us * 1e-6,
            # The board's timed region ends just before its reply; the reply takes well under a
            # millisecond, so the region is placed ending at the reply's arrival.
            "t_start": max(t_sent, t_end - device_s),
            "t_end": t_end,
        }
        if result.preprocess_us is None:
            body["preprocess_reason"] = "the sample was int8 features: nothing to pre-process"
        return body

    def _repeat(self, params: dict[str, Any], stop: threading.Event) -> dict[str, Any]:
        stage = params.get("stage")
        if stage not in STAGES:
            raise DriverError(
                f"asc repeat stage must be one of {list(STAGES)}, got {stage!r}", "bad_arguments"
            )
        duration = float(params.get("duration_s", 0.0))
        if not 0 < duration <= MAX_REPEAT_S:
            raise DriverError(
                f"asc repeat duration_s must be in (0, {MAX_REPEAT_S:g}], got {duration}",
                "bad_arguments",
            )
        index = _index(params) if stage != "idle" or "index" in params else 0
        t_sent = now()
        result = self._call(
            f"repeating {stage}", lambda b: b.repeat(index, STAGES[stage], duration, stop)
        )
        t_end = now()
        return {
            "stage": stage,
            "index": index,
            "iterations": result.iterations,
            "mean_s": result.mean_s,
            "std_error_s": result.std_error_s,
            "t_start": max(t_sent, t_end - result.elapsed_us * 1e-6),
            "t_end": t_end,
            "stopped_early": result.stopped_early,
        }

    def close(self) -> None:
        self._close_board()
        if self._emulator is not None:
            self._emulator.stop()
            self._emulator = None
        if self._meter_link is not None:
            self._meter_link.close()
            self._meter_link = None


def _index(params: dict[str, Any]) -> int:
    index = params.get("index", 0)
    if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < 65536:
        raise DriverError(
            f"sample index must be an integer 0..65535, got {index!r}", "bad_arguments"
        )
    return index


__all__ = ["ArduinoDriver"]
