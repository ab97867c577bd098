"""Commands that only read the store or the queue start without numpy or the wire codec: each
`hilbench` process pays its imports (~0.1 s for numpy here), and `hilbench results` at 100 000
runs has one second in all (issue 32). A module that imports numpy at its top again, anywhere on
these commands' import path, fails this test by name."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from hilbench.store import StoreWriter

HEAVY = ("numpy", "hilbench.wire.codec")

# Runs the command in this interpreter, then says which of HEAVY it imported.
PROBE = f"""
import json, sys
from hilbench.launch import main
sys.argv = ["hilbench", *sys.argv[1:]]
try:
    main()
except SystemExit:
    pass
print(json.dumps([m for m in {HEAVY!r} if m in sys.modules]), file=sys.stderr)
"""


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("store") / "s.sqlite"
    with StoreWriter(path) as writer:
        writer.begin_campaign("c1", "light", {})
        writer.end_campaign("c1", "success")
    return path


@pytest.mark.parametrize("args", [("results",), ("status",), ("queue", "list"),
                                  ("queue", "history")], ids=" ".join)
def test_reading_commands_import_no_numpy(store: Path, args: tuple[str, ...]) -> None:
    proc = subprocess.run([sys.executable, "-c", PROBE, *args, "--db", str(store)],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    imported = json.loads(proc.stderr.strip().splitlines()[-1])
    assert imported == [], f"`hilbench {' '.join(args)}` imported {imported}"
