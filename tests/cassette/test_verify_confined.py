"""`hilbench audit verify` and `replay` read only inside the folder they are given (issue 31):
a manifest line naming a file outside the bundle (``..``, an absolute path) or a symlink out of
it fails naming the entry and never reads it, so verify is no hash oracle; a /proc entry and a
1.5 GB line fail within 5 s and 200 MB (measured: the child's own VmHWM and CPU time); a
stream name or a hash entry pointing outside, and deeply nested JSON, are one line each."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import stat
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from tests.doors.inputs import make_bundle, oxum_of, rewrite_bag
from tests.subprocesses import hilbench, hilbench_command

TIME_LIMIT_S = 5.0
MEMORY_LIMIT_MB = 200


@pytest.fixture(scope="module")
def clean_bundle(tmp_path_factory) -> Path:
    return make_bundle(tmp_path_factory.mktemp("confined") / "bundle")


@pytest.fixture
def bundle(clean_bundle, tmp_path) -> Path:
    copy = tmp_path / "work" / "bundle"
    shutil.copytree(clean_bundle, copy, symlinks=True)
    return copy


def _verify(bundle: Path) -> subprocess.CompletedProcess:
    return hilbench("audit", "verify", bundle, timeout=120)


def _listing(bundle: Path, digest: str, name: str) -> None:
    with (bundle / "manifest-sha256.txt").open("a") as fh:
        fh.write(f"{digest}  {name}\n")


def test_the_bundle_the_tests_tamper_with_verifies(clean_bundle):
    done = _verify(clean_bundle)
    assert done.returncode == 0, done.stdout + done.stderr
    figures = sum('"kind": "metric"' in line
                  for line in (clean_bundle / "data" / "documents.jsonl").open())
    assert f"every hash agrees; {figures} figure(s) recomputed, all agree" in done.stdout


def _entries_outside(bundle: Path, outside: Path) -> dict[str, str]:
    """Manifest names that reach ``outside`` from the bundle, by the way they get there."""
    up = "../" * len(bundle.resolve().parts)  # more steps up than the bundle is deep: to /
    return {
        "a path up out of the bundle": os.path.relpath(outside, bundle),
        "a path up from inside data/": "data/" + os.path.relpath(outside, bundle / "data"),
        "a path up to the root and down": up + str(outside).lstrip("/"),
        "an absolute path": str(outside),
    }


@pytest.mark.parametrize("way", ["a path up out of the bundle", "a path up from inside data/",
                                 "a path up to the root and down", "an absolute path"])
def test_a_manifest_line_naming_a_file_outside_fails_naming_it_and_is_no_hash_oracle(
        bundle, tmp_path, way):
    outside = tmp_path / "secret.txt"
    outside.write_text("root-only figure\n")
    name = _entries_outside(bundle, outside)[way]
    true = hashlib.sha256(outside.read_bytes()).hexdigest()
    answers = []
    for digest in (true, "0" * 64):  # the true hash and a wrong one: the same answer
        copy = tmp_path / f"b-{digest[:4]}"
        shutil.copytree(bundle, copy)
        _listing(copy, digest, name)
        done = _verify(copy)
        assert done.returncode == 1, done.stdout + done.stderr
        assert "Traceback" not in done.stderr
        (line,) = [x for x in done.stdout.splitlines() if name in x]
        assert "not read" in line
        answers.append(done.stdout.replace(str(copy), "B"))
    assert answers[0] == answers[1]


@pytest.mark.parametrize("target", ["file", "folder", "proc"])
def test_a_symlink_out_of_the_bundle_fails_naming_it_and_is_not_followed(
        bundle, tmp_path, target):
    outside = tmp_path / "secret.txt"
    outside.write_text("root-only figure\n")
    if target == "file":
        (bundle / "data" / "link").symlink_to(outside)
        name = "data/link"
    elif target == "folder":
        (bundle / "data" / "up").symlink_to(tmp_path, target_is_directory=True)
        name = "data/up/secret.txt"
    else:
        (bundle / "data" / "link").symlink_to("/proc/self/pagemap")
        name = "data/link"
    digest = hashlib.sha256(outside.read_bytes()).hexdigest()
    _listing(bundle, digest, name)
    rewrite_bag(bundle, manifest=False)  # a Payload-Oxum that agrees: the bag check goes on
    done = _verify(bundle)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    link = name.split("/")[1]
    assert f"{bundle / 'data' / link}: a symlink in the payload" in done.stdout
    assert "every hash agrees" not in done.stdout


def _peak_mb(pid: int, peak: float) -> float:
    """The larger of ``peak`` and the process's own high-water resident set (VmHWM, MB)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return peak
    for line in status.splitlines():
        if line.startswith("VmHWM:"):
            return max(peak, int(line.split()[1]) / 1024)
    return peak


def _measured(args: list[str | Path]
              ) -> tuple[subprocess.CompletedProcess, float, float, float]:
    """Run ``hilbench ARGS``; its result, wall seconds, CPU seconds and peak resident memory
    in MB. CPU time is the child's own (wait4): the work done whatever else the machine runs;
    wall time is what the user waits. Memory is the high-water mark of the child's own address
    space (VmHWM, read every millisecond until it ends), not wait4's ru_maxrss: Linux carries
    the pre-exec copy of the parent into that, and a pytest worker that ran the suite's other
    tests is 1 GB (measured 1 047 MB for a verify that used ~80)."""
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        started = time.monotonic()
        proc = subprocess.Popen(hilbench_command(*args), stdout=out, stderr=err, text=True)
        peak = 0.0
        while True:  # wait4, not Popen.wait: the child's own rusage
            peak = _peak_mb(proc.pid, peak)
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            if time.monotonic() - started > 60:
                proc.kill()
            time.sleep(0.001)
        wall = time.monotonic() - started
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        done = subprocess.CompletedProcess(proc.args, proc.returncode, out.read(), err.read())
    return done, wall, usage.ru_utime + usage.ru_stime, peak


def test_a_proc_entry_fails_at_once_within_5_s_and_200_mb(bundle):
    _listing(bundle, "0" * 64, "/proc/self/pagemap")
    (bundle / "data" / "pagemap").symlink_to("/proc/self/pagemap")
    _listing(bundle, "0" * 64, "data/pagemap")
    done, wall, cpu, peak_mb = _measured(["audit", "verify", bundle])
    assert done.returncode == 1, done.stdout + done.stderr
    assert "/proc/self/pagemap: an absolute path" in done.stdout
    assert f"{bundle / 'data' / 'pagemap'}: a symlink in the payload" in done.stdout
    assert cpu < TIME_LIMIT_S and wall < TIME_LIMIT_S and peak_mb < MEMORY_LIMIT_MB, (
        cpu, wall, peak_mb)


def test_a_kernel_file_reached_without_a_symlink_is_not_read():
    from hilbench.confined_read import ConfinedError, ConfinedFolder

    with pytest.raises(ConfinedError, match="a kernel file"):
        ConfinedFolder(Path("/proc/self")).read("status")


def test_a_1_5_gb_line_fails_within_5_s_and_200_mb_naming_the_file(bundle):
    documents = bundle / "data" / "documents.jsonl"
    with documents.open("ab") as fh:  # one line of 1.5 GB, sparse: quick to make
        fh.write(b'{"kind": "event", "data": "')
        fh.truncate(1_500_000_000)
    # A bag that declares it (Payload-Oxum): the bound that stops it is the line's, not the
    # bag's size check; the manifest's hash of it is never completed.
    rewrite_bag(bundle, manifest=False)
    assert oxum_of(bundle)[0] > 1_500_000_000
    done, wall, cpu, peak_mb = _measured(["audit", "verify", bundle])
    assert done.returncode == 1, done.stdout + done.stderr
    assert done.stdout.splitlines() == [f"{documents}: a line longer than 8388608 bytes"]
    assert cpu < TIME_LIMIT_S and wall < TIME_LIMIT_S and peak_mb < MEMORY_LIMIT_MB, (
        cpu, wall, peak_mb)
    # replay --analysis-only reads the same file the same way
    done, wall, cpu, peak_mb = _measured(["replay", "--analysis-only", bundle])
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr.splitlines() == [f"error: {documents}: a line longer than 8388608 bytes"]
    assert cpu < TIME_LIMIT_S and wall < TIME_LIMIT_S and peak_mb < MEMORY_LIMIT_MB, (
        cpu, wall, peak_mb)


def test_a_payload_larger_than_the_bag_declares_is_not_hashed(bundle):
    with (bundle / "data" / "arrays" / "extra").open("wb") as fh:
        fh.truncate(50_000_000)
    done = _verify(bundle)
    assert done.returncode == 1
    declared = oxum_of(bundle)[0]
    assert (f"{bundle / 'bag-info.txt'}: Payload-Oxum declares {declared} bytes, data/ holds "
            f"{declared + 50_000_000}: nothing hashed") in done.stdout


def _edit_lines(path: Path, change) -> None:
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    change(lines)
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))


@pytest.mark.parametrize("name", ["../../../etc/hostname", "/etc/hostname", "a/b", ".hidden",
                                  "x\ny"])
def test_a_stream_name_that_is_not_a_file_name_in_samples_fails_in_one_line(bundle, name):
    samples = bundle / "data" / "samples.jsonl"
    _edit_lines(samples, lambda lines: lines[0].update(stream=name))
    rewrite_bag(bundle)
    done = _verify(bundle)
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    assert done.stdout.splitlines() == [
        f"{samples} line 1: stream name {name!r} is not a plain file name in samples/"]


def test_a_stream_hash_entry_outside_its_files_fails_in_one_line(bundle):
    samples = bundle / "data" / "samples.jsonl"
    digest = hashlib.sha256(Path("/etc/hostname").read_bytes()).hexdigest() \
        if Path("/etc/hostname").is_file() else "0" * 64
    _edit_lines(samples, lambda lines: lines[1]["sha256"].update(
        {"../../../../../../../../etc/hostname": digest}))
    rewrite_bag(bundle)
    done = _verify(bundle)
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    (line,) = done.stdout.splitlines()
    assert line.startswith(f"{samples} line 2: stream 000001-dmm0 lists "
                           "'../../../../../../../../etc/hostname'")


@pytest.mark.parametrize("where", ["documents.jsonl", "samples.jsonl", "manifest.json"])
def test_deeply_nested_json_fails_in_one_line_naming_the_file(bundle, where):
    path = bundle / "data" / where
    deep = "[" * 100_000 + "]" * 100_000
    if where == "manifest.json":
        path.write_text(f'{{"format_version": 1, "x": {deep}}}')
    else:
        with path.open("a") as fh:
            fh.write(f'{{"kind": "event", "data": {deep}}}\n')
    rewrite_bag(bundle)
    done = _verify(bundle)
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    (line,) = done.stdout.splitlines()
    assert line.startswith(str(path)) and line.endswith("JSON nested deeper than 64 levels")


def test_brackets_inside_json_strings_do_not_count_as_nesting(bundle):
    documents = bundle / "data" / "documents.jsonl"
    _edit_lines(documents, lambda lines: lines[0].update(note="[" * 500 + "{" * 500))
    rewrite_bag(bundle)
    done = _verify(bundle)
    assert done.returncode == 0, done.stdout + done.stderr


def test_a_fifo_or_a_device_in_the_payload_fails_naming_it_without_hanging(bundle):
    odd = {bundle / "data" / "fifo": "a FIFO"}
    os.mkfifo(bundle / "data" / "fifo")
    if os.geteuid() == 0:  # making a device takes root; reading one is refused for anyone
        os.mknod(bundle / "data" / "null", stat.S_IFCHR | 0o600, os.makedev(1, 3))
        odd[bundle / "data" / "null"] = "a character device"
    for path in odd:
        _listing(bundle, "0" * 64, f"data/{path.name}")
    done = _verify(bundle)
    assert done.returncode == 1
    for path, kind in odd.items():
        assert f"{path}: {kind} in the payload" in done.stdout


def test_replay_refuses_a_cassette_whose_documents_are_a_symlink(tmp_path):
    cassette = tmp_path / "c"
    shutil.copytree(Path(__file__).parents[1] / "cassettes" / "qubo-cpu", cassette)
    outside = tmp_path / "documents.jsonl"
    (cassette / "documents.jsonl").rename(outside)
    (cassette / "documents.jsonl").symlink_to(outside)
    for args in (["replay", cassette], ["replay", "--analysis-only", cassette]):
        done = hilbench(*args, timeout=120)
        assert done.returncode == 2, done.stdout + done.stderr
        (line,) = done.stderr.splitlines()
        assert line.startswith("error: ") and line.endswith(
            f"{cassette / 'documents.jsonl'}: a symlink, not a regular file")
