"""`hilbench arduino probe|emulate|model-header`: talk to a board, or be one."""

from __future__ import annotations

import sys
import threading

import click

from hilbench.lifeline import call_on_signal

EXIT_UNREACHABLE = 3  # hilbench.cli's code for "could not be reached"


@click.group()
def arduino() -> None:
    """Arduino Nano 33 BLE running firmware/hilbench_asc (or its host build).

    No board? `hilbench arduino emulate` starts the firmware's host build on a
    pseudo-terminal; give that path to `probe --port` or to a campaign's agent
    (options = { port = "/dev/pts/N" }, or port = "emulate" to start one there).
    """


@arduino.command()
@click.option(
    "--port",
    default="auto",
    show_default=True,
    help="Serial device (e.g. /dev/ttyACM0, a pty path); 'auto' finds USB VID:PID 2341:805A.",
)
@click.option("--baud", default=115200, show_default=True, help="Baud rate (USB CDC ignores it).")
@click.option("--timeout", "timeout_s", default=2.0, show_default=True, help="Seconds per reply.")
def probe(port: str, baud: int, timeout_s: float) -> None:
    """Identify the board on PORT, or say exactly why not (exit 3).

    Reasons it names: no such port, no answer (silent board, wrong port), garbage
    (not the hilbench firmware, wrong baud rate), a protocol version this hilbench
    does not speak.
    """
    from hilbench_drivers.arduino.board import Board
    from hilbench_drivers.arduino.discovery import resolve_port
    from hilbench_drivers.arduino.link import BoardError, SerialLink

    try:
        path = resolve_port(port)
        link = SerialLink.open(path, baud, timeout_s=timeout_s)
    except BoardError as exc:
        click.echo(f"error [{exc.code}]: {exc}", err=True)
        sys.exit(EXIT_UNREACHABLE)
    try:
        link.discard_input()
        identity = Board(link).identify()
    except BoardError as exc:
        click.echo(f"error [{exc.code}]: {exc}", err=True)
        sys.exit(EXIT_UNREACHABLE)
    finally:
        link.close()
    click.echo(f"port:       {path}")
    click.echo(f"board:      {identity.board}{' (simulated)' if identity.simulated else ''}")
    click.echo(f"firmware:   {identity.firmware} (protocol {identity.protocol})")
    click.echo(f"model:      {identity.model} ({', '.join(identity.classes)})")
    click.echo(
        f"samples:    {identity.sample_count} at {identity.sample_rate} Hz, "
        f"capacity {identity.capacity}, chunk {identity.chunk} B"
    )


@arduino.command()
@click.option(
    "--sim-meter",
    default=None,
    metavar="HOST:PORT",
    help="Send the marker's state changes to a simulated bench meter (hilbench sim-meter).",
)
@click.option("--quiet", is_flag=True, help="Do not print marker lines.")
def emulate(sim_meter: str | None, quiet: bool) -> None:
    """Start the firmware's host build on a new pseudo-terminal.

    The pty's path is printed on a line of its own (first line of output); the
    emulator serves the hilbench serial protocol there until Ctrl-C. Marker pin
    changes are printed as "marker <state> <t>" unless --quiet. The host build is
    compiled with CMake on first use (or set HILBENCH_ARDUINO_HOST).
    """
    from hilbench_drivers.arduino.emulator import HostEmulator
    from hilbench_drivers.arduino.link import BoardError

    link = None
    if sim_meter:
        from hilbench.sim.device_link import SimulatedDeviceLink

        try:
            link = SimulatedDeviceLink(sim_meter)
        except (OSError, ValueError) as exc:
            raise click.ClickException(
                f"cannot reach the simulated meter at {sim_meter}: {exc}"
            ) from exc

    def on_state(state: str, t: float) -> None:
        if link is not None:
            link.state(state, t)
        if not quiet:
            click.echo(f"marker {state} {t:.6f}", err=True)

    done = threading.Event()
    call_on_signal(done.set)
    try:
        emulator = HostEmulator(on_state=on_state)
        path = emulator.start()
    except BoardError as exc:
        click.echo(f"error [{exc.code}]: {exc}", err=True)
        sys.exit(1)
    try:
        click.echo(path)
        sys.stdout.flush()
        click.echo("host build serving the hilbench serial protocol; Ctrl-C stops it", err=True)
        while not done.wait(0.5) and emulator.running():
            pass
    except KeyboardInterrupt:
        pass
    finally:
        emulator.stop()
        if link is not None:
            link.close()


@arduino.command("model-header")
@click.option("--model", "model_path", default=None, help="Model .npz (default: the vectors').")
@click.option("--check", is_flag=True, help="Exit 1 if the header is not current.")
def model_header(model_path: str | None, check: bool) -> None:
    """Generate firmware/hilbench_asc/src/model_data.h from a model file."""
    from hilbench_drivers.arduino.model_header import main

    args = (["--model", model_path] if model_path else []) + (["--check"] if check else [])
    sys.exit(main(args))
