"""`hilbench bench arduino-serial`: what the serial link costs per sample and per inference.

Against a board (``--port``) or the firmware's host build on a pty (default), through the
driver's own code path (``Board.load`` / ``Board.run``): the time to transfer one 1 s sample
(32 000 bytes of int16 PCM in 1 KiB chunks, each acknowledged) and the protocol overhead per
inference (RUN round trip minus the board's own pre-processing + inference time). Both are
printed beside the theoretical wire time at the chosen baud rate (10 bits per byte, every frame
byte both ways). A pty and USB CDC have no baud rate, so they can beat the "theoretical" figure;
a UART bridge cannot.
"""

from __future__ import annotations

import statistics
import time
import zlib

import click
import numpy as np

from hilbench_drivers.arduino.protocol import (
    CHUNK_MAX_BYTES,
    Kind,
    MsgType,
    encode_frame,
    index_payload,
    load_begin,
    load_chunk,
)

BITS_PER_BYTE = 10  # 8N1: start + 8 data + stop


def wire_bytes_for_sample(data: bytes, chunk: int = CHUNK_MAX_BYTES) -> int:
    """Bytes both ways for one sample load: every request (with its leading delimiter) and reply."""
    total = 1 + len(
        encode_frame(
            MsgType.LOAD_BEGIN, 1, load_begin(0, Kind.AUDIO_PCM16, len(data), zlib.crc32(data))
        )
    )
    total += len(encode_frame(MsgType.LOAD_READY, 1, bytes(7)))
    for offset in range(0, len(data), chunk):
        total += 1 + len(
            encode_frame(MsgType.LOAD_CHUNK, 1, load_chunk(offset, data[offset : offset + chunk]))
        )
        total += len(encode_frame(MsgType.CHUNK_OK, 1, bytes(4)))
    total += 1 + len(encode_frame(MsgType.LOAD_END, 1, index_payload(0)))
    total += len(encode_frame(MsgType.LOADED, 1, bytes(11)))
    return total


def wire_bytes_for_run(classes: int) -> int:
    return (
        1
        + len(encode_frame(MsgType.RUN, 1, index_payload(0)))
        + len(encode_frame(MsgType.RESULT, 1, bytes(13 + 4 * classes)))
    )


@click.command("arduino-serial")
@click.option(
    "--port", default=None, help="A board's serial port; default: the host build on a pty."
)
@click.option("--baud", default=115200, show_default=True, help="Baud rate for the wire time.")
@click.option("--samples", default=20, show_default=True, help="Sample loads to time.")
@click.option("--runs", default=50, show_default=True, help="Inferences to time.")
def arduino_serial(port: str | None, baud: int, samples: int, runs: int) -> None:
    """Serial transfer time per 1 s sample and protocol overhead per inference."""
    from hilbench_drivers.arduino.board import Board, audio_to_pcm16
    from hilbench_drivers.arduino.emulator import HostEmulator
    from hilbench_drivers.arduino.link import BoardError, SerialLink

    if samples < 1 or runs < 1:
        raise click.BadParameter("--samples and --runs must be at least 1")
    emulator = None
    try:
        if port is None:
            emulator = HostEmulator()
            port = emulator.start()
        link = SerialLink.open(port, baud, timeout_s=5.0)
        link.discard_input()
        board = Board(link)
        identity = board.identify()
        t = np.arange(identity.sample_count) / identity.sample_rate
        data = audio_to_pcm16((0.3 * np.sin(2 * np.pi * 440 * t)).astype(np.float32))
        loads = [board.load(0, Kind.AUDIO_PCM16, data) for _ in range(samples)]
        overhead, device = [], []
        for _ in range(runs):
            t0 = time.perf_counter()
            result = board.run(0)
            round_trip = time.perf_counter() - t0
            device_s = ((result.preprocess_us or 0) + result.inference_us) * 1e-6
            device.append(device_s)
            overhead.append(round_trip - device_s)
        link.close()
    except BoardError as exc:
        raise click.ClickException(f"[{exc.code}] {exc}") from exc
    finally:
        if emulator is not None:
            emulator.stop()

    sample_wire = wire_bytes_for_sample(data, identity.chunk) * BITS_PER_BYTE / baud
    run_wire = wire_bytes_for_run(len(identity.classes)) * BITS_PER_BYTE / baud
    median_load = statistics.median(loads)
    median_overhead = statistics.median(overhead)
    where = f"{identity.board} on {port}" + (" (simulated)" if identity.simulated else "")
    click.echo(f"board:                 {where}")
    click.echo(f"sample:                {len(data)} B int16 PCM, {identity.chunk} B chunks")
    click.echo(
        f"sample transfer:       median {median_load * 1e3:8.2f} ms  min {min(loads) * 1e3:8.2f} ms"
        f"  ({samples} loads)   wire time at {baud} baud: {sample_wire * 1e3:8.1f} ms"
    )
    click.echo(
        f"overhead / inference:  median {median_overhead * 1e6:8.0f} us  "
        f"p90 {float(np.percentile(overhead, 90)) * 1e6:8.0f} us  ({runs} runs; board time median "
        f"{statistics.median(device) * 1e3:.2f} ms)   wire time: {run_wire * 1e6:8.0f} us"
    )
    click.echo(
        f"arduino-serial: sample {median_load * 1e3:.2f} ms (wire {sample_wire * 1e3:.1f} ms at "
        f"{baud} baud), overhead {median_overhead * 1e6:.0f} us per inference "
        f"(wire {run_wire * 1e6:.0f} us)"
    )
