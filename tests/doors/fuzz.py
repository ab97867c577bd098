"""What the fuzz tests of issue 31 share: every file a user hands hilbench, generated broken in
many ways, must give the documented exit code, one line naming the file per problem, never a
traceback, and nothing written outside the working folder.

The bulk of the examples run the command in-process (click's CliRunner): an uncaught exception
is a failure there even before the last-resort handler of `hilbench.launch` could hide it. An
audit hook watches every file opened for writing, every folder made or entry renamed or removed,
and every SQLite database opened, and fails the example on any outside the working folder.

``HILBENCH_FUZZ_EXAMPLES`` sets the number of generated inputs per test (default
:data:`DEFAULT_EXAMPLES`, which keeps the suite quick); ``HILBENCH_FUZZ_STATS=FILE`` appends
one JSON line per test with the exit codes seen and the time taken."""

from __future__ import annotations

import contextlib
import json
import os
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

DEFAULT_EXAMPLES = 25
EXAMPLES = int(os.environ.get("HILBENCH_FUZZ_EXAMPLES", DEFAULT_EXAMPLES))


def fuzz_settings(share: float = 1.0) -> settings:
    """Hypothesis settings for ``share`` of :data:`EXAMPLES` inputs (at least 5)."""
    return settings(max_examples=max(5, round(EXAMPLES * share)), deadline=None, database=None,
                    suppress_health_check=list(HealthCheck), print_blob=True)


# --- where a command writes --------------------------------------------------------------------

_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
_watched: list[tuple[Path, list[str]]] = []


def _path(value: Any) -> Path | None:
    if isinstance(value, (str, bytes, os.PathLike)):
        text = os.fsdecode(value)
        if text.startswith("file:"):  # an SQLite URI
            if "mode=ro" in text:
                return None
            text = text[5:].split("?", 1)[0]
        if text in ("", ":memory:"):
            return None
        return Path(os.path.abspath(text))
    return None


def _audit(event: str, args: tuple[Any, ...]) -> None:
    if not _watched:
        return
    paths: list[Any] = []
    if event == "open" and isinstance(args[2], int) and args[2] & _WRITE_FLAGS:
        paths = [args[0]]
    elif event in ("os.mkdir", "os.remove", "os.rmdir", "os.chmod", "os.truncate",
                   "os.symlink", "os.link", "shutil.rmtree", "os.utime"):
        paths = [args[1] if event in ("os.symlink", "os.link") else args[0]]
    elif event == "os.rename":
        paths = [args[0], args[1]]
    elif event == "sqlite3.connect":
        paths = [args[0]]
    work, outside = _watched[-1]
    for value in paths:
        path = _path(value)
        if path is None or path.is_relative_to(work) or path == Path(os.devnull):
            continue
        if "__pycache__" in path.parts or path.is_relative_to(_LOCKS) or (
                sys.pycache_prefix and path.is_relative_to(sys.pycache_prefix)):
            continue  # Python's byte code (tests/bytecode.py); this session's bench locks
        outside.append(f"{event} {path}")


_LOCKS = Path(os.environ.get("HILBENCH_LOCK_DIR", "/nonexistent"))
sys.addaudithook(_audit)


@dataclass
class Outcome:
    code: int
    stdout: str
    stderr: str
    exception: BaseException | None
    outside: list[str] = field(default_factory=list)

    @property
    def errors(self) -> list[str]:
        return self.stderr.splitlines()


@contextlib.contextmanager
def _working_in(work: Path) -> Iterator[list[str]]:
    """cwd, HOME, the state and temporary folders inside ``work``; the writes seen outside."""
    outside: list[str] = []
    old_cwd, old_tmp = os.getcwd(), tempfile.tempdir
    (work / "tmp").mkdir(parents=True, exist_ok=True)
    _watched.append((work.resolve(), outside))
    os.chdir(work)
    tempfile.tempdir = str(work / "tmp")
    try:
        yield outside
    finally:
        _watched.pop()
        os.chdir(old_cwd)
        tempfile.tempdir = old_tmp


def invoke(args: list[str | Path], work: Path) -> Outcome:
    """``hilbench ARGS`` in-process with ``work`` as working folder, HOME and TMPDIR."""
    from click.testing import CliRunner

    from hilbench.cli import cli

    env = {"HOME": str(work), "XDG_STATE_HOME": str(work / "state"),
           "XDG_CACHE_HOME": str(work / "cache"), "TMPDIR": str(work / "tmp"),
           "HILBENCH_DB": str(work / "default.sqlite"), "COLUMNS": "200"}
    with _working_in(work) as outside:
        result = CliRunner().invoke(cli, [str(a) for a in args], env=env,
                                    catch_exceptions=True)
    exception = result.exception if not isinstance(result.exception, SystemExit) else None
    return Outcome(result.exit_code, result.stdout, result.stderr, exception, outside)


def check(outcome: Outcome, codes: set[int], named: str | Path) -> None:
    """The example's rules: an allowed exit code, no traceback, nothing written outside;
    an exit other than 0 and 1 says why in ``error:`` lines, each naming ``named``."""
    assert outcome.exception is None, _describe(outcome)
    assert "Traceback" not in outcome.stderr + outcome.stdout, _describe(outcome)
    assert not outcome.outside, _describe(outcome)
    assert outcome.code in codes, _describe(outcome)
    if outcome.code not in (0, 1):
        errors = [line for line in outcome.errors if line.startswith("error:")]
        assert errors, _describe(outcome)
        assert all(str(named) in line for line in errors), _describe(outcome)
    STATS[_current_test()][outcome.code] += 1


def _describe(outcome: Outcome) -> str:
    import traceback

    trace = "".join(traceback.format_exception(outcome.exception)) if outcome.exception else ""
    return (f"exit {outcome.code}\nstdout: {outcome.stdout[-2000:]}\nstderr: "
            f"{outcome.stderr[-2000:]}\nwritten outside: {outcome.outside}\n{trace}")


# --- how many of each outcome (HILBENCH_FUZZ_STATS) --------------------------------------------

STATS: dict[str, Counter[int]] = {}
_STARTED: dict[str, float] = {}


def _current_test() -> str:
    name = os.environ.get("PYTEST_CURRENT_TEST", "?").split(" ")[0]
    if name not in STATS:
        STATS[name] = Counter()
        _STARTED[name] = time.monotonic()
    return name


def write_stats() -> None:
    target = os.environ.get("HILBENCH_FUZZ_STATS")
    if not target:
        return
    with open(target, "a", encoding="utf-8") as fh:
        for name, codes in STATS.items():
            fh.write(json.dumps({"test": name, "examples": sum(codes.values()),
                                 "exit_codes": dict(sorted(codes.items())),
                                 "seconds": round(time.monotonic() - _STARTED[name], 1)}) + "\n")
    STATS.clear()


# --- generated values ----------------------------------------------------------------------------

HOSTILE_NAMES = st.sampled_from([
    "../../../../../../etc/hostname", "/etc/hostname", "/proc/self/pagemap", "a/../../b",
    "samples/../../x", "", ".", "..", "a//b", "x\x00y", "x\ny", "ä" * 300, "samples/" * 40,
    "-", "--help", "data/../data/x"])
SCALARS = (st.none() | st.booleans() | st.integers(-(2**70), 2**70)
           | st.floats(allow_nan=True, allow_infinity=True) | st.text(max_size=30) | HOSTILE_NAMES)
JSON_VALUES = st.recursive(
    SCALARS, lambda inner: st.lists(inner, max_size=4)
    | st.dictionaries(st.text(max_size=10) | HOSTILE_NAMES, inner, max_size=4), max_leaves=16)


def nested(depth: int, kind: str = "[") -> str:
    close = {"[": "]", "{": "}"}[kind]
    if kind == "[":
        return "[" * depth + "]" * depth
    return '{"a": ' * depth + "1" + close * depth


@st.composite
def deep_json(draw: Any) -> str:
    return nested(draw(st.sampled_from([63, 64, 65, 100, 1000, 100_000])),
                  draw(st.sampled_from(["[", "{"])))


def mutate_bytes(draw: Any, raw: bytes) -> bytes:
    """``raw`` changed the way files get damaged: cut short, bytes flipped, cut out, inserted,
    a block zeroed, or replaced whole."""
    how = draw(st.sampled_from(["cut", "flip", "delete", "insert", "zero", "replace"]))
    at = draw(st.integers(0, len(raw)))
    if how == "cut":
        return raw[:at]
    if how == "flip" and raw:
        at = min(at, len(raw) - 1)
        return raw[:at] + bytes([raw[at] ^ draw(st.integers(1, 255))]) + raw[at + 1:]
    if how == "delete":
        return raw[:at] + raw[at + draw(st.integers(1, 64)):]
    if how == "insert":
        return raw[:at] + draw(st.binary(min_size=1, max_size=64)) + raw[at:]
    if how == "zero":
        return raw[:at] + bytes(min(len(raw) - at, draw(st.integers(1, 4096)))) \
            + raw[at + draw(st.integers(1, 4096)):]
    return draw(st.binary(max_size=256))


def mutate_json(draw: Any, value: Any) -> Any:
    """``value`` (a parsed JSON object) with one key or element changed, removed or added."""
    if not isinstance(value, (dict, list)) or not value:
        return draw(JSON_VALUES)
    keys = list(value) if isinstance(value, dict) else list(range(len(value)))
    key = draw(st.sampled_from(keys))
    how = draw(st.sampled_from(["replace", "remove", "descend", "add"]))
    value = dict(value) if isinstance(value, dict) else list(value)
    if how == "remove":
        del value[key]
    elif how == "descend" and isinstance(value[key], (dict, list)):
        value[key] = mutate_json(draw, value[key])
    elif how == "add" and isinstance(value, dict):
        value[draw(st.text(max_size=10) | HOSTILE_NAMES)] = draw(JSON_VALUES)
    else:
        value[key] = draw(JSON_VALUES)
    return value


def mutate_jsonl(draw: Any, raw: bytes) -> bytes:
    """A JSON-lines file with one line changed: a key's value of another type, a line of
    another value, a deeply nested or very long line, a line that is not JSON."""
    lines = raw.splitlines(keepends=True) or [b"{}\n"]
    i = draw(st.integers(0, len(lines) - 1))
    how = draw(st.sampled_from(["value", "value", "value", "line", "deep", "long", "garbage"]))
    if how == "value":
        try:
            new = json.dumps(mutate_json(draw, json.loads(lines[i]))) + "\n"
        except ValueError:
            new = "{}\n"
    elif how == "line":
        new = json.dumps(draw(JSON_VALUES)) + "\n"
    elif how == "deep":
        new = '{"kind": "event", "run_uid": "x", "name": "e", "data": ' + draw(deep_json()) \
            + "}\n"
    elif how == "long":
        new = '{"kind": "event", "data": "' + "x" * draw(st.sampled_from(
            [1000, 9_000_000])) + '"}\n'
    else:
        new = draw(st.text(max_size=40)) + "\n"
    lines[i] = new.encode("utf-8", "surrogatepass")
    return b"".join(lines)


def subprocess_check(args: list[str | Path], tmp_path: Path, code: int,
                     named: str | Path) -> str:
    """``hilbench ARGS`` as a user runs it, in ``tmp_path/work`` (its cwd, HOME and TMPDIR):
    exit ``code``, exactly one line on stderr, naming ``named``, and nothing new in
    ``tmp_path`` outside ``work``. Returns the line."""
    from tests.subprocesses import hilbench

    work = tmp_path / "work"
    (work / "tmp").mkdir(parents=True, exist_ok=True)
    before = {p for p in tmp_path.rglob("*") if not p.is_relative_to(work)}
    env = {**os.environ, "HOME": str(work), "XDG_STATE_HOME": str(work / "state"),
           "XDG_CACHE_HOME": str(work / "cache"), "TMPDIR": str(work / "tmp")}
    done = hilbench(*args, timeout=120, cwd=work, env=env)
    assert done.returncode == code, done.stdout + done.stderr
    (line,) = done.stderr.splitlines()
    assert str(named) in line and "Traceback" not in done.stdout, line
    after = {p for p in tmp_path.rglob("*") if not p.is_relative_to(work)}
    assert after == before, sorted(after ^ before)
    return line


# --- TOML ------------------------------------------------------------------------------------

TOML_SCALARS = (st.booleans() | st.integers(-(2**63), 2**63 - 1)
                | st.floats(allow_nan=True, allow_infinity=True) | st.text(max_size=30)
                | HOSTILE_NAMES)
TOML_VALUES = st.recursive(
    TOML_SCALARS, lambda inner: st.lists(inner, max_size=4)
    | st.dictionaries(st.text(max_size=10) | HOSTILE_NAMES, inner, max_size=4), max_leaves=12)


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        if value != value:
            return "nan"
        if value in (float("inf"), float("-inf")):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{json.dumps(k)} = {_toml_value(v)}"
                               for k, v in value.items()) + "}"
    return json.dumps(str(value))


def toml_text(doc: dict[str, Any]) -> str:
    """``doc`` written as TOML: top-level values, then ``[table]`` and ``[[array]]`` sections
    (keys quoted, so any key may be written)."""
    head, sections = [], []
    for key, value in doc.items():
        name = json.dumps(key)
        if isinstance(value, dict):
            sections.append(f"[{name}]\n" + "".join(f"{json.dumps(k)} = {_toml_value(v)}\n"
                                                    for k, v in value.items()))
        elif isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
            sections += [f"[[{name}]]\n" + "".join(f"{json.dumps(k)} = {_toml_value(v)}\n"
                                                   for k, v in table.items())
                         for table in value]
        else:
            head.append(f"{name} = {_toml_value(value)}\n")
    return "".join(head) + "\n".join(sections)


TOML_SNIPPETS = st.sampled_from([
    "a = " + "[" * 5000 + "]" * 5000, "a = " + "{b = " * 5000 + "1" + "}" * 5000,
    "[" + ".".join(["t"] * 5000) + "]", ".".join(["k"] * 200) + " = 1",
    "a = " + "[" * 65 + "]" * 65, "a = " + "[" * 64 + "]" * 64, 'x = "a\x00b"', "\ufeff",
    'big = "' + "x" * 300_000 + '"', "[[qubo]]", "[campaign]", "[[agents]]", '"\\ud800"',
    "a = 1\na = 2", "= 1", "[a]\n[a]", 'k = """' + "[" * 500 + '"""', "# " + "{" * 500])


@st.composite
def toml_file(draw: Any, base: bytes) -> bytes:
    """``base`` (a TOML file) broken: its tables' values changed (types, nesting, names),
    a hostile snippet inserted (deep nesting, NUL, huge strings, duplicate tables), its bytes
    damaged (invalid UTF-8, cut short), or several of these."""
    import tomllib

    from hilbench.bounded_parse import depth

    raw = base
    for _ in range(draw(st.integers(1, 3))):
        how = draw(st.sampled_from(["values", "values", "snippet", "bytes"]))
        if how == "values":
            try:
                doc = tomllib.loads(raw.decode("utf-8"))
            except (UnicodeDecodeError, tomllib.TOMLDecodeError, RecursionError):
                continue
            if depth(doc) > 32:  # written back below by recursion
                continue
            changed = mutate_json(draw, doc)
            changed = changed if isinstance(changed, dict) else {"value": changed}
            raw = toml_text(changed).encode("utf-8", "surrogatepass")
        elif how == "snippet":
            lines = raw.split(b"\n")
            at = draw(st.integers(0, len(lines)))
            snippet = draw(TOML_SNIPPETS).encode("utf-8", "surrogatepass")
            raw = b"\n".join([*lines[:at], snippet, *lines[at:]])
        else:
            raw = mutate_bytes(draw, raw)
    return raw


# --- folders: cassettes and bundles ------------------------------------------------------------

def damage_file(draw: Any, path: Path, outside: Path) -> str:
    """Damage the file at ``path`` one way; says how. ``outside``: a file outside the folder
    that a symlink may point to."""
    how = draw(st.sampled_from(["content", "content", "content", "content", "symlink",
                                "fifo", "folder", "remove", "empty"]))
    if how == "content":
        raw = path.read_bytes()
        if path.suffix == ".jsonl" and draw(st.booleans()):
            path.write_bytes(mutate_jsonl(draw, raw))
        elif path.suffix == ".json" and draw(st.booleans()):
            try:
                value = mutate_json(draw, json.loads(raw))
                text = json.dumps(value) if draw(st.booleans()) else \
                    json.dumps(value)[:-1] + ', "x": ' + draw(deep_json()) + "}"
            except (ValueError, RecursionError):  # damaged before (deep nesting, say)
                text = draw(deep_json())
            path.write_text(text, "utf-8", "surrogatepass")
        else:
            path.write_bytes(mutate_bytes(draw, raw))
        return f"content of {path.name}"
    path.unlink()
    if how == "symlink":
        path.symlink_to(draw(st.sampled_from([outside, Path("/proc/self/status"),
                                              path.parent / "nowhere", path.parent])))
    elif how == "fifo":
        os.mkfifo(path)
    elif how == "folder":
        path.mkdir()
    elif how == "empty":
        path.touch()
    return f"{path.name}: {how}"


def damage_folder(draw: Any, folder: Path, outside: Path, times: int = 3) -> list[str]:
    """Damage 1 to ``times`` of the regular files under ``folder``; how, for the report."""
    done = []
    for _ in range(draw(st.integers(1, times))):
        files = sorted(p for p in folder.rglob("*") if p.is_file() and not p.is_symlink())
        if not files:
            break
        done.append(damage_file(draw, draw(st.sampled_from(files)), outside))
    return done


@contextlib.contextmanager
def example_folder(factory: Any) -> Iterator[tuple[Path, Path]]:
    """``(work, outside)`` for one generated example: the working folder, and a file beside it
    that a symlink may point to (a read of it would be a read outside). Removed afterwards:
    10 000 examples of copied bundles would fill a disk."""
    import shutil

    base = factory.mktemp("example")
    work = base / "work"
    work.mkdir()
    outside = base / "outside.txt"
    outside.write_text("not the working folder's\n")
    try:
        yield work, outside
    finally:
        shutil.rmtree(base, ignore_errors=True)
