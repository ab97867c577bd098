"""The firmware's host build on a pseudo-terminal: a board for everyone who has none.

:class:`HostEmulator` starts ``hilbench_fw_host`` (firmware/host, built with CMake), reads the pty
path it prints, and turns its marker lines (``MARK <state> <CLOCK_MONOTONIC s>``, the host
build's stand-in for the marker GPIO pin) into calls of ``on_state`` — on the simulated bench,
state changes of the meter's ``arduino-nano-33-ble`` power model. The emulator's standard input
is a pipe from us: when this process dies, however abruptly, the pipe closes and the emulator
exits, so it never outlives its parent.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import logging
import os
import shutil
import signal
import subprocess
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from hilbench.lifeline import start_child
from hilbench_drivers.arduino.link import BoardError

if TYPE_CHECKING:
    from hilbench.workloads.asc.quant import QuantisedModel

log = logging.getLogger(__name__)

ENV_BINARY = "HILBENCH_ARDUINO_HOST"
BINARY_NAME = "hilbench_fw_host"
FIRMWARE_DIR = Path(__file__).resolve().parents[2] / "firmware"
DEFAULT_BUILD_DIR = FIRMWARE_DIR / "build" / "host"
START_TIMEOUT_S = 10.0


def find_host_build() -> Path | None:
    """$HILBENCH_ARDUINO_HOST, else firmware/build/host/hilbench_fw_host, if it exists."""
    env = os.environ.get(ENV_BINARY)
    if env:
        return Path(env) if Path(env).is_file() else None
    candidate = DEFAULT_BUILD_DIR / BINARY_NAME
    return candidate if candidate.is_file() else None


def build_host(
    build_dir: Path = DEFAULT_BUILD_DIR, quiet: bool = True, extra: list[str] | None = None
) -> Path:
    """Configure (once) and build the host firmware with CMake; returns the program's path.

    The build step always runs: it is incremental, so an up-to-date program costs a fraction of
    a second and one built from older firmware sources is never used by mistake.
    """
    cmake = shutil.which("cmake")
    if cmake is None or not (FIRMWARE_DIR / "CMakeLists.txt").is_file():
        raise BoardError(
            "the firmware's host build is missing and cannot be built here (needs cmake, a C++ "
            f"compiler and the source tree's firmware/); build it with `cmake -S {FIRMWARE_DIR} "
            f"-B {build_dir} && cmake --build {build_dir}` or set {ENV_BINARY}",
            "no_firmware",
        )
    steps = [[cmake, "--build", str(build_dir), "--target", BINARY_NAME]]
    if configured_source(build_dir) not in (None, FIRMWARE_DIR):
        # A build directory configured from another checkout (moved, or a cache shared by two
        # trees): CMake refuses to build it, so configure it afresh for this one.
        log.warning("%s was configured from %s; configuring it for %s", build_dir,
                    configured_source(build_dir), FIRMWARE_DIR)
        shutil.rmtree(build_dir)
    if not (build_dir / "CMakeCache.txt").is_file():
        configure = [cmake, "-S", str(FIRMWARE_DIR), "-B", str(build_dir)]
        steps.insert(0, [*configure, "-DCMAKE_BUILD_TYPE=Release", *(extra or [])])
    out = subprocess.DEVNULL if quiet else None
    for args in steps:
        proc = subprocess.run(args, stdout=out, stderr=subprocess.PIPE, text=True)
        if proc.returncode != 0:
            raise BoardError(
                f"building the host firmware failed: {' '.join(args)}\n{proc.stderr[-2000:]}",
                "no_firmware",
            )
    return build_dir / BINARY_NAME


@contextlib.contextmanager
def _one_builder(folder: Path) -> Iterator[None]:
    """Hold ``folder``'s build lock: one process at a time configures and builds there. Two
    campaigns (or two test workers) flashing the same model at once configured one CMake build
    directory together and both failed ("CMAKE_C_COMPILER not set"); the second now waits and
    finds the program built."""
    folder.mkdir(parents=True, exist_ok=True)
    fd = os.open(folder / ".build.lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing releases the lock


def _default_build_lock() -> contextlib.AbstractContextManager[None]:
    """The default build folder's lock; none where there is no source tree (an installed wheel:
    build_host says why it cannot build, and no folder is made for it)."""
    if FIRMWARE_DIR.is_dir():
        return _one_builder(DEFAULT_BUILD_DIR.parent)
    return contextlib.nullcontext()


def configured_source(build_dir: Path) -> Path | None:
    """The source directory a CMake build directory was configured from (None: not configured)."""
    cache = build_dir / "CMakeCache.txt"
    if not cache.is_file():
        return None
    for line in cache.read_text("utf-8", errors="replace").splitlines():
        if line.startswith("CMAKE_HOME_DIRECTORY:"):
            return Path(line.split("=", 1)[1]).resolve()
    return None


def model_build_dir(fingerprint: str) -> Path:
    """Where the host build for one model lives, per source tree and model:
    ``$XDG_CACHE_HOME/hilbench/arduino-host/<tree>-<fp>`` (two checkouts never share one)."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    tree = hashlib.sha256(str(FIRMWARE_DIR).encode()).hexdigest()[:8]
    return Path(base) / "hilbench" / "arduino-host" / f"{tree}-{fingerprint}"


def host_build_for_model(model: QuantisedModel) -> Path:
    """The host build compiled with ``model`` (the emulator's "flashing"), built once per model.

    The model header is generated exactly as for a board (:mod:`.model_header`) into the cache
    directory, and CMake builds the same firmware sources against it (``-DHB_MODEL_HEADER``).
    """
    from hilbench_drivers.arduino.model_header import model_fingerprint, render_header

    fingerprint = model_fingerprint(model)
    directory = model_build_dir(fingerprint)
    with _one_builder(directory):
        header = directory / "model_data.h"
        text = render_header(model, f"a campaign's model {fingerprint}")
        if not header.is_file() or header.read_text("utf-8") != text:
            header.write_text(text, "utf-8")
        if not (directory / "build" / BINARY_NAME).is_file():
            log.warning("building the firmware's host build for model %s (once)", fingerprint)
        return build_host(directory / "build", extra=[f"-DHB_MODEL_HEADER={header}"])


def host_build(build: bool = True) -> Path:
    """The host build's program, built first if it is missing and ``build``."""
    found = find_host_build()
    if found is not None:
        if not os.environ.get(ENV_BINARY) and shutil.which("cmake"):
            with _default_build_lock():
                return build_host()  # incremental: rebuilt only if the sources changed
        return found
    if os.environ.get(ENV_BINARY):
        raise BoardError(f"{ENV_BINARY}={os.environ[ENV_BINARY]} is not a file", "no_firmware")
    if not build:
        raise BoardError(
            f"no host build at {DEFAULT_BUILD_DIR / BINARY_NAME}; run `hilbench arduino emulate` "
            "(it builds it) or set " + ENV_BINARY,
            "no_firmware",
        )
    log.warning("building the firmware's host build in %s (once)", DEFAULT_BUILD_DIR)
    with _default_build_lock():
        return build_host()


class HostEmulator:
    """A running host build; ``path`` is its pseudo-terminal. Use as a context manager."""

    def __init__(
        self,
        on_state: Callable[[str, float], None] | None = None,
        program: Path | None = None,
    ) -> None:
        self.program = program or host_build()
        self.on_state = on_state
        self.states: list[tuple[str, float]] = []  # every marker seen, for tests and logs
        self._proc: subprocess.Popen[str] | None = None
        self._reader: threading.Thread | None = None
        self.path = ""

    def start(self) -> str:
        self._proc = start_child(
            [str(self.program)],
            # Its own session (a Ctrl-C meant for us reaches it through us, once) and SIGKILL
            # when we die: a board frozen by pause() (SIGSTOP) reads no stdin and would hold
            # a SIGTERM pending for ever.
            death_signal=signal.SIGKILL,
            stdin=subprocess.PIPE,  # closes when we die: a second way to learn of it
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert self._proc.stdout is not None
        line = _readline_with_timeout(self._proc.stdout, START_TIMEOUT_S)
        if not line.startswith("/dev/"):
            self.stop()
            raise BoardError(
                f"the host build did not announce a pty (said {line!r})", "no_firmware"
            )
        self.path = line.strip()
        self._reader = threading.Thread(target=self._read_markers, daemon=True, name="emu-marker")
        self._reader.start()
        return self.path

    def _read_markers(self) -> None:
        proc = self._proc
        assert proc is not None and proc.stderr is not None
        for line in proc.stderr:
            parts = line.split()
            if len(parts) == 3 and parts[0] == "MARK":
                try:
                    t = float(parts[2])
                except ValueError:
                    continue
                self.states.append((parts[1], t))
                if self.on_state is not None:
                    try:
                        self.on_state(parts[1], t)
                    except Exception:  # the bench must not take the board down with it
                        log.exception("marker %s could not be forwarded", parts[1])
            elif line.strip():
                log.info("host build: %s", line.rstrip())

    def reset(self) -> None:
        """Imitate a board reset (SIGUSR1): the sample is lost, the boot banner is sent."""
        if self._proc is not None:
            self._proc.send_signal(signal.SIGUSR1)

    def pause(self) -> None:
        """Freeze the board (SIGSTOP): a silent board."""
        if self._proc is not None:
            self._proc.send_signal(signal.SIGSTOP)

    def resume(self) -> None:
        if self._proc is not None:
            self._proc.send_signal(signal.SIGCONT)

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc else None

    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def stop(self) -> None:
        proc, self._proc = self._proc, None
        if proc is None:
            return
        if proc.poll() is None:
            proc.send_signal(signal.SIGCONT)
            proc.terminate()
            try:
                proc.wait(timeout=3)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=3)
        for stream in (proc.stdin, proc.stdout):
            if stream is not None:
                stream.close()
        if self._reader is not None:
            self._reader.join(timeout=2)
        if proc.stderr is not None:
            proc.stderr.close()

    def __enter__(self) -> HostEmulator:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _readline_with_timeout(stream: object, timeout_s: float) -> str:
    result: list[str] = []
    reader = threading.Thread(target=lambda: result.append(stream.readline()), daemon=True)  # type: ignore[attr-defined]
    reader.start()
    reader.join(timeout_s)
    return result[0] if result else ""
