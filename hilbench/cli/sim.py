"""`hilbench sim-meter`: the simulated bench meter as a process of its own, like a real DMM."""

from __future__ import annotations

import sys
import threading

import click

from hilbench.lifeline import call_on_signal


@click.command("sim-meter")
@click.option(
    "--model",
    default="simulated-cpu",
    show_default=True,
    help="Power model of the simulated device (see hilbench/sim/power_model.py).",
)
@click.option(
    "--host",
    default="127.0.0.1",
    show_default=True,
    help="Loopback address to listen on (127.0.0.1, ::1 or localhost: the meter has no keys).",
)
@click.option("--port", default=0, show_default=True, help="TCP port (0 picks a free one).")
@click.option(
    "--noise",
    "noise_std_w",
    default=0.0,
    show_default=True,
    help="Instrument noise per reading, watts (standard deviation).",
)
@click.option(
    "--memory",
    "memory_readings",
    default=50_000,
    show_default=True,
    help="Reading memory size, like the 34465A's (50 000 without the MEM option).",
)
@click.option(
    "--drift-ppm",
    default=0.0,
    show_default=True,
    help="The timebase runs this many ppm slow (+) or fast (-): every sample interval is "
    "stretched by it, as a real meter's crystal drifts.",
)
@click.option(
    "--gain-error",
    default=0.0,
    show_default=True,
    help="Calibration gain error: every reading is truth x (1 + this) + --offset-error.",
)
@click.option(
    "--offset-error",
    default=0.0,
    show_default=True,
    help="Calibration offset error in the measured unit (A or V).",
)
@click.option("--seed", default=None, type=int, help="Noise seed (default: random).")
@click.option(
    "--announce",
    is_flag=True,
    hidden=True,
    help="Print 'READY host:port' once listening (used when hilbench starts it).",
)
def sim_meter(
    model: str,
    host: str,
    port: int,
    noise_std_w: float,
    memory_readings: int,
    drift_ppm: float,
    gain_error: float,
    offset_error: float,
    seed: int | None,
    announce: bool,
) -> None:
    """Serve a simulated Keysight 34465A over SCPI/TCP until SIGTERM or Ctrl-C.

    Its readings follow the state a simulated device reports with `SIM:STAT <state>[,<t>]`;
    a device that tells its changes late says `SIM:HOLD <t>` (told up to t: later readings
    wait) and `SIM:LIVE` when it reports as it goes again; `SIM:LATE?` counts readings computed
    from a timeline told late (also logged). `SIM:SYNC?` answers 1 once the connection's earlier
    lines are acted on (a device asks it after each change, before it says it is done).
    `SIM:TRUTH? <t0>,<t1>` returns the true mean power of a window. Reach it with pyvisa-py as
    TCPIP::HOST::PORT::SOCKET.
    """
    from hilbench.orchestrator.instruments import POWER_MODELS
    from hilbench.sim import SimulatedMeter

    if model not in POWER_MODELS:
        raise click.BadParameter(
            f"{model!r} is not one of {sorted(POWER_MODELS)}", param_hint="--model"
        )
    try:
        meter = SimulatedMeter(
            POWER_MODELS[model],
            host=host,
            port=port,
            noise_std_w=noise_std_w,
            memory_readings=memory_readings,
            seed=seed,
            drift_ppm=drift_ppm,
            gain_error=gain_error,
            offset_error=offset_error,
        )
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--host") from None
    stop = threading.Event()
    call_on_signal(stop.set)
    with meter:
        if announce:
            click.echo(f"READY {meter.host}:{meter.port}")
            sys.stdout.flush()
        else:
            click.echo(f"simulated meter ({model}) at {meter.resource}", err=True)
        try:
            while not stop.wait(0.5):
                pass
        except KeyboardInterrupt:
            pass
