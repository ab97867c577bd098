"""Instrument cassettes for tests: record one acquisition of a simulated or emulated instrument
(at the driver-API boundary or the serial line), write what it measured beside it
(``expected.json``), and replay it in a child process where the vendor library cannot be
imported. Record modes as the ``cassette`` fixture's (:mod:`tests.cassette_recording`): under
``CI=true`` nothing is recorded and a missing cassette fails."""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from tests.cassette_recording import CASSETTES, under_ci

ROOT = Path(__file__).resolve().parents[1]


def acquire(source: Any, stimulus: Callable[[], object] | None, seconds: float) -> dict[str, Any]:
    """One acquisition: what a replay must give again (counts, a hash of the values, the
    spacing of the stamps, every marker edge)."""
    source.configure()
    source.arm()
    source.start()
    batches, edges = [], []
    deadline = time.monotonic() + seconds
    stimulated = stimulus is None
    while time.monotonic() < deadline:
        time.sleep(0.03)
        batches.append(source.read())
        if not stimulated:
            stimulus()
            stimulated = True
    batches.append(source.stop())
    edges = [(e.channel, e.index.tolist(), e.level.tolist()) for e in source.markers()
             if len(e)]
    info = source.info
    source.close()
    values = np.concatenate([b.values for b in batches])
    t = np.concatenate([b.t for b in batches])
    return {"samples": len(values),
            "values_sha256": hashlib.sha256(values.astype("<f8").tobytes()).hexdigest(),
            "span_s": float(t[-1] - t[0]) if len(t) else 0.0,
            "edges": edges, "simulated": info.simulated, "unit": info.unit}


def use_instrument_cassette(name: str, record: Callable[[Path], dict[str, Any]],
                            mode: str | None) -> Path:
    """The cassette ``tests/cassettes/NAME``, recorded by ``record(folder)`` when the mode
    says so (see the module)."""
    mode = mode or ("none" if under_ci() else "once")
    folder = CASSETTES / name
    exists = (folder / "expected.json").is_file()
    if mode == "none" or (mode == "once" and exists):
        if not exists:
            raise FileNotFoundError(f"instrument cassette {folder} is missing and the record "
                                    "mode is none: record it with --record-mode once")
        return folder
    with tempfile.TemporaryDirectory(prefix="cassette-") as tmp:
        fresh = Path(tmp) / name
        expected = record(fresh)
        (fresh / "expected.json").write_text(json.dumps(expected, indent=1) + "\n")
        shutil.rmtree(folder, ignore_errors=True)
        shutil.move(fresh, folder)
    return folder


def run_without(blocked: list[str], code: str) -> Any:
    """Run ``code`` (which prints one JSON line) in a child where ``blocked`` modules cannot be
    imported."""
    prelude = "import sys\n" + "".join(f"sys.modules[{m!r}] = None\n" for m in blocked)
    out = subprocess.run([sys.executable, "-c", prelude + code], capture_output=True,
                         text=True, cwd=ROOT, timeout=120)
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])
