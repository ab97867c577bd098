"""Parsing what a user hands hilbench (campaign and system TOML, a cassette's or a bundle's
JSON) with its size and nesting depth bounded *before* the parser sees it: the parsers recurse
per level of nesting and hold a whole line or file in memory, so a 5 000-deep array is a
RecursionError and one 1.5 GB line 3.6 GB of memory. Every refusal is an :class:`InputError`
whose one line names the file (and line) and what is wrong.

The bounds, from the files hilbench writes (measured on the cassettes in tests/cassettes and
the campaigns in examples/ and tests/):

- nesting depth :data:`MAX_DEPTH` = 64: the deepest JSON document is 8 levels, the deepest
  TOML file 5 (tomllib fails at ~330 nested arrays, json at ~1000, pydantic and the report
  code well before a Python stack runs out at 64);
- a JSON line or file :data:`MAX_JSON_BYTES` = 8 MiB: the longest line is 4.5 KB (an ASC
  metric with its meta), and an agent message's header, the largest thing a channel line
  holds inline, is at most 64 KiB (arrays are stored beside, by sha256);
- a TOML file :data:`MAX_TOML_BYTES` = 256 KiB: the largest campaign is 3.2 KB, and tomllib
  reads ~0.6 MB/s here, so the largest file allowed parses in about 0.4 s.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import tomllib

MAX_DEPTH = 64
MAX_JSON_BYTES = 8 << 20
MAX_TOML_BYTES = 256 << 10

_JSON_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"', re.S)
# TOML strings (multi-line first, as they start like single-line ones) and comments: what a
# bracket inside does not nest.
_TOML_SKIPPED = re.compile(
    r'"""(?:[^\\]|\\.)*?"{3,5}|\'\'\'.*?\'{3,5}|"(?:[^"\\\n]|\\.)*"|\'[^\'\n]*\'|#[^\n]*',
    re.S)


class InputError(ValueError):
    """A file (or line) that is not what it should be; the message names it, in one line."""


def _bracket_depth(data: bytes) -> int:
    """The deepest nesting of ``[``/``{`` in ``data`` (strings and comments removed)."""
    import numpy as np

    codes = np.frombuffer(data, dtype=np.uint8)
    steps = ((codes == ord("[")) | (codes == ord("{"))).astype(np.int64) \
        - ((codes == ord("]")) | (codes == ord("}"))).astype(np.int64)
    return int(np.cumsum(steps).max(initial=0))


def _too_deep(data: bytes, skipped: re.Pattern[bytes]) -> bool:
    if data.count(b"[") + data.count(b"{") <= MAX_DEPTH:
        return False  # the common case: not even that many brackets
    return _bracket_depth(skipped.sub(b"", data)) > MAX_DEPTH


def json_value(data: bytes | str, where: str) -> Any:
    """One JSON value (a line or a whole file), its size and depth checked before parsing."""
    raw = data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data
    if len(raw) > MAX_JSON_BYTES:
        raise InputError(f"{where}: {len(raw)} bytes of JSON, more than the {MAX_JSON_BYTES} "
                         "read at once")
    if _too_deep(raw, _JSON_STRING):
        raise InputError(f"{where}: JSON nested deeper than {MAX_DEPTH} levels")
    try:
        return json.loads(raw)
    except UnicodeDecodeError as exc:
        raise InputError(f"{where}: not UTF-8 (byte {exc.start})") from None
    except ValueError as exc:
        raise InputError(f"{where}: not JSON ({exc})") from None


def json_lines(lines: Iterable[bytes], where: str) -> Iterator[tuple[int, Any]]:
    """``(line number, value)`` of each line of a JSON-lines file (lines bounded by the
    reader, e.g. :meth:`hilbench.confined_read.ConfinedFile.lines`). A last line without its
    newline is where a killed recording stopped: it is skipped."""
    for number, line in enumerate(lines, start=1):
        if not line.endswith(b"\n"):
            return
        yield number, json_value(line, f"{where} line {number}")


def json_object(data: bytes | str, where: str) -> dict[str, Any]:
    """:func:`json_value` that must be an object."""
    return as_object(json_value(data, where), where)


def as_object(value: Any, where: str) -> dict[str, Any]:
    """``value`` when it is a JSON object; else an InputError naming ``where``."""
    if not isinstance(value, dict):
        raise InputError(f"{where}: a JSON {type(value).__name__}, not an object")
    return value


def depth(value: Any) -> int:
    """How deeply ``value``'s lists and tables nest (counted without recursion)."""
    deepest, pending = 0, [(value, 1)]
    while pending:
        item, level = pending.pop()
        deepest = max(deepest, level)
        if level > MAX_DEPTH:
            break
        if isinstance(item, dict):
            pending.extend((v, level + 1) for v in item.values())
        elif isinstance(item, list):
            pending.extend((v, level + 1) for v in item)
    return deepest


def toml_document(raw: bytes, where: str) -> dict[str, Any]:
    """A TOML file's tables, its size, encoding and depth checked before parsing (arrays and
    inline tables by their brackets) and after (tables nested by dotted keys and headers)."""
    if len(raw) > MAX_TOML_BYTES:
        raise InputError(f"{where}: {len(raw)} bytes, more than the {MAX_TOML_BYTES} a TOML "
                         "file may hold")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"{where} is not UTF-8 text (TOML must be): byte {exc.start} "
                         f"(0x{raw[exc.start]:02x}) cannot be decoded ({exc.reason})") from None
    outside = _TOML_SKIPPED.sub("", text).encode("utf-8")
    if outside.count(b"[") + outside.count(b"{") > MAX_DEPTH \
            and _bracket_depth(outside) > MAX_DEPTH:
        raise InputError(f"{where}: arrays or inline tables nested deeper than {MAX_DEPTH} "
                         "levels")
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"{where} is not valid TOML: {exc}") from None
    if depth(data) > MAX_DEPTH:
        raise InputError(f"{where}: tables nested deeper than {MAX_DEPTH} levels")
    return data


def read_bounded(path: str | os.PathLike[str], max_bytes: int, what: str = "file") -> bytes:
    """The bytes of the file the user named at ``path``, refused beyond ``max_bytes`` (read
    no further than that, whatever the file is)."""
    try:
        with open(path, "rb") as fh:
            data = fh.read(max_bytes + 1)
    except OSError as exc:
        raise InputError(f"cannot read {what} {path}: {exc.strerror or exc}") from None
    if len(data) > max_bytes:
        raise InputError(f"{path}: more than the {max_bytes} bytes a {what} may hold")
    return data


def read_toml(path: str | os.PathLike[str], what: str = "TOML file") -> dict[str, Any]:
    """The tables of the TOML file at ``path`` (:func:`toml_document`)."""
    return toml_document(read_bounded(path, MAX_TOML_BYTES, what), str(Path(path)))
