"""A real, small disk for tests of a full or read-only store: a tmpfs mounted for the test
(the machine and CI run as root; elsewhere the test is skipped, saying why)."""

from __future__ import annotations

import contextlib
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest


def mount_tmpfs(mountpoint: Path, options: str) -> None:
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(mountpoint)],
                          capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here (needs root): {done.stderr.strip()}")


def remount(mountpoint: Path, options: str) -> None:
    subprocess.run(["mount", "-o", f"remount,{options}", str(mountpoint)], check=True)


@contextlib.contextmanager
def small_tmpfs(folder: Path, size: str = "2m") -> Iterator[Path]:
    """A tmpfs of ``size`` at ``folder`` (made), unmounted afterwards."""
    folder.mkdir()
    mount_tmpfs(folder, f"size={size},mode=0755")
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=False)
