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

from hilbench.agent.dispatch import ContractDriver
from hilbench.agent.driver import DriverError
from hilbench.clock import now
from hilbench.contracts.capabilities import ConfigureReply, Settings
from hilbench.workloads.asc.contract import (
    MAX_WINDOW_S,
    STAGES,
    AscHeldReply,
    AscLoadModel,
    AscLoadSample,
    AscLoadStream,
    AscModelReply,
    AscRepeat,
    AscSampleResult,
    AscSingleStream,
    AscStreamReply,
    AscUnload,
    AscUnloadStream,
    AscWindowResult,
)
from hilbench_drivers.arduino.board import Board, Identity, audio_to_pcm16
from hilbench_drivers.arduino.discovery import resolve_port
from hilbench_drivers.arduino.link import BoardError, BoardReset, SerialLink
from hilbench_drivers.arduino.protocol import Kind, Stage

log = logging.getLogger(__name__)

# the contract's stage names -> the serial protocol's stage codes
STAGE_CODES = {"idle": Stage.IDLE, "preprocessing": Stage.PREPROCESSING,
               "inference": Stage.INFERENCE}
MAX_REPEAT_S = MAX_WINDOW_S
# The load protocol's frames around a sample's bytes (begin, one per chunk, end, replies).
SAMPLE_FRAME_BYTES = 4096
SIMULATION = (
    "the firmware's host build on a pseudo-terminal: the real protocol, MFE and int8 CNN code, "
    "timed by the host's clock, power from the simulated meter's arduino-nano-33-ble model"
)


# The firmware's marker pin (firmware/hilbench_asc/board_arduino.cpp): what an instrument's
# digital input records around each timed stage (issue 35).
MARKER: dict[str, Any] = {
    "pin": "D2",
    "high": "during each timed stage (preprocessing, inference; a repeat window as one region)",
    "low": "at idle",
}


def marker_level(state: str) -> int:
    """The marker pin's level in ``state``."""
    return 0 if state == "idle" else 1


class ArduinoDriver(ContractDriver):
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
        """The emulated board's stage change and its marker pin with it: the firmware drives
        the pin high during each timed stage and low at idle (``board::marker``)."""
        if self._meter_link is not None:
            self._meter_link.state(state, t, marker=marker_level(state))

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
                "stages": list(STAGES),  # timed stages; repeat takes idle too
                "stream_capacity": 0,  # no streams: the board holds one sample
                "max_repeat_s": MAX_REPEAT_S,
                "model_fingerprint": identity.model,
                "classes": list(identity.classes),
                "sample_rate": identity.sample_rate,
                "sample_formats": ["float32 audio (sent as int16 PCM)", "int8 features"],
                "sample_untimed": self._sample_untimed(identity.sample_rate),
            },
            "marker": dict(MARKER),
            "power": {
                "source": "external",
                "available": False,
                "reason": "the board has no power sensor: measure it with an instrument",
            },
        }
        if identity.simulated:
            caps["simulation"] = SIMULATION
        return caps

    def _sample_untimed(self, sample_rate: int) -> dict[str, Any]:
        """What a sample costs outside its stages inside a request's window: its load over the
        serial link (int16 PCM and the protocol's frames, 10 bits a byte at ``baud``; a pty or
        USB CDC is faster), twice for a resent chunk, and the RUN/UNLOAD exchanges, each
        within the driver's reply timeout."""
        wire_s = (2 * sample_rate + SAMPLE_FRAME_BYTES) * 10 / self.baud
        return {"max_s": 2 * wire_s + 2 * self.timeout_s,
                "reason": f"a sample's load over the serial link ({wire_s:.2f} s of int16 PCM and "
                          f"frames at {self.baud} baud, twice for a resent chunk) and the RUN and "
                          f"UNLOAD exchanges (each within timeout_s = {self.timeout_s:g} s)"}

    def apply(self, settings: Settings) -> ConfigureReply:
        return ConfigureReply(detail={"board": self._identity().board})

    # -- ASC device role (bodies arrive checked against hilbench.workloads.asc.contract) ------

    def free_sample(self, body: AscUnload) -> AscHeldReply:
        self._call("unload", lambda b: b.unload(body.index))
        self._held = None
        return AscHeldReply(index=body.index, held=[])

    def load_stream(self, body: AscLoadStream, audio: np.ndarray) -> AscStreamReply:
        raise DriverError("the board holds one sample and plays no streams "
                          "(capabilities asc.stream_capacity 0)", "device_full")

    def free_stream(self, body: AscUnloadStream) -> AscStreamReply:
        raise DriverError("the board holds one sample and plays no streams "
                          "(capabilities asc.stream_capacity 0)", "device_full")

    def load_model(self, body: AscLoadModel, arrays: list[np.ndarray]) -> AscModelReply:
        from hilbench.workloads.asc.quant import ModelFileError, QuantisedModel
        from hilbench_drivers.arduino.model_header import model_fingerprint

        try:
            model = QuantisedModel.from_parts(body.meta, dict(zip(body.arrays, arrays,
                                                                  strict=True)))
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
        return AscModelReply(
            classes=list(identity.classes),
            input_frames=identity.frames,
            input_filters=identity.filters,
            sample_rate=identity.sample_rate,
            weight_bytes=model.weight_bytes,
            sample_capacity=identity.capacity,
            detail={"model_fingerprint": fingerprint, "built_in": True, "reflashed": reflashed},
        )

    def load_sample(self, body: AscLoadSample, sample: np.ndarray) -> AscHeldReply:
        index = body.index
        if index >= 65536:
            raise DriverError(f"the board numbers samples 0..65535, got {index}",
                              "bad_arguments", key="index")
        identity = self._identity()
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
        return AscHeldReply(index=index, held=[index], capacity=identity.capacity,
                            detail={"bytes": len(data), "format": kind.name.lower(),
                                    "transfer_s": transfer_s})

    def run_sample(self, body: AscSingleStream) -> AscSampleResult:
        index = body.index
        t_sent = now()
        result = self._call(f"running sample {index}", lambda b: b.run(index))
        t_end = now()
        device_s = ((result.preprocess_us or 0) + result.inference_us) * 1e-6
        return AscSampleResult(
            index=result.index,
            predicted=result.predicted,
            scores=list(result.logits),
            preprocess_s=None if result.preprocess_us is None else result.preprocess_us * 1e-6,
            preprocess_reason=("the sample was int8 features: nothing to pre-process"
                               if result.preprocess_us is None else None),
            inference_s=result.inference_us * 1e-6,
            # The board's timed region ends just before its reply; the reply takes well under a
            # millisecond, so the region is placed ending at the reply's arrival.
            t_start=max(t_sent, t_end - device_s),
            t_end=t_end,
        )

    def run_repeat(self, body: AscRepeat, stop: threading.Event) -> AscWindowResult:
        index = body.index if body.index is not None else 0  # idle holds any sample
        t_sent = now()
        result = self._call(f"repeating {body.stage}", lambda b: b.repeat(
            index, STAGE_CODES[body.stage], body.duration_s, stop))
        t_end = now()
        return AscWindowResult(
            stage=body.stage,
            index=index,
            iterations=result.iterations,
            mean_s=result.mean_s,
            std_error_s=result.std_error_s,
            t_start=max(t_sent, t_end - result.elapsed_us * 1e-6),
            t_end=t_end,
            stopped_early=result.stopped_early,
        )

    def close(self) -> None:
        self._close_board()
        if self._emulator is not None:
            self._emulator.stop()
            self._emulator = None
        if self._meter_link is not None:
            self._meter_link.close()
            self._meter_link = None


__all__ = ["ArduinoDriver"]
