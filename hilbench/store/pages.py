"""A page-tolerant reader of a SQLite file: walks each table's b-tree page by page and returns
every row whose pages can be read, plus the rowid ranges of subtrees it could not read (a page
past the end of a truncated file, a page that is not a b-tree page, a broken overflow chain).

SQLite's own reader stops at the first bad page ("database disk image is malformed"), and
the sqlite3 shell's `.recover` in Debian 12 (3.40.1) fails with "SQL logic error" even on an
intact store, so `hilbench store salvage` reads the file format itself
(https://sqlite.org/fileformat2.html): table b-trees, records and overflow pages only, which is
all a store's rows live in. The main file only: :mod:`hilbench.store.wal` lays the pages
committed in a -wal over it.
"""

from __future__ import annotations

import mmap
import struct
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

_LEAF_TABLE, _INTERIOR_TABLE = 13, 5


@dataclass(frozen=True)
class LostRange:
    """Rowids ``lo < rowid <= hi`` of a table that sat in pages that could not be read (None:
    unbounded on that side), and why."""

    lo: int | None
    hi: int | None
    page: int
    why: str

    def meets(self, lo: int | None, hi: int | None) -> bool:
        """Whether any rowid ``lo < rowid < hi`` (None: unbounded) may have been lost here."""
        low = max(_num(self.lo, -(2**63)), _num(lo, -(2**63))) + 1
        high = min(_num(self.hi, 2**63), _num(hi, 2**63) - 1)
        return low <= high


def _num(value: int | None, default: int) -> int:
    return default if value is None else value


@dataclass
class TableRead:
    """What could be read of one table: rows as (rowid, values), and what was lost."""

    rows: list[tuple[int, list[Any]]] = field(default_factory=list)
    lost: list[LostRange] = field(default_factory=list)


class BadPage(Exception):
    """A page that is missing or is not what the tree says it is."""


class PageReader:
    """Reads a SQLite database file's pages, however much of it is left."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        with self.path.open("rb") as fh:  # mapped, not read: a store may be gigabytes
            size = fh.seek(0, 2)
            self.data: bytes | mmap.mmap = (
                mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) if size else b""
            )
        if len(self.data) < 100 or self.data[:16] != b"SQLite format 3\x00":
            raise BadPage(f"{self.path}: no SQLite header (the first page is lost)")
        size = struct.unpack_from(">H", self.data, 16)[0]
        self.page_size = 65536 if size == 1 else size
        self.usable = self.page_size - self.data[20]
        # A last page cut part way is read for the bytes it still has (every read is checked).
        self.pages_in_file = -(-len(self.data) // self.page_size)
        header_pages = struct.unpack_from(">I", self.data, 28)[0]
        valid = self.data[24:28] == self.data[92:96]
        self.pages_expected = header_pages if valid and header_pages else self.pages_in_file

    # -- pages ---------------------------------------------------------------------------------

    def page(self, number: int) -> bytes:
        if not 1 <= number <= self.pages_in_file:
            raise BadPage(f"page {number} is past the end of the file ({self.pages_in_file} pages)")
        start = (number - 1) * self.page_size
        return self.data[start : start + self.page_size]

    def read_table(self, root: int) -> TableRead:
        """Every readable row of the table b-tree rooted at page ``root``."""
        result = TableRead()
        result.rows.extend(self.iter_table(root, result.lost))
        return result

    def iter_table(self, root: int, lost: list[LostRange]) -> Iterator[tuple[int, list[Any]]]:
        """The readable rows of the table rooted at ``root`` in rowid order, one at a time (a
        table may be larger than memory); what cannot be read is appended to ``lost``."""
        yield from self._walk(root, None, None, lost, set())

    def schema(self) -> tuple[dict[str, int], list[LostRange]]:
        """Table name -> root page, as far as sqlite_master (rooted at page 1) can be read,
        and what of sqlite_master is lost."""
        read = self.read_table(1)
        tables = {}
        for _rowid, values in read.rows:
            if len(values) >= 5 and values[0] == "table" and isinstance(values[3], int):
                tables[values[1]] = values[3]
        return tables, read.lost

    # -- b-trees -------------------------------------------------------------------------------

    def _leaf_rows(
        self, page: bytes, pointers: list[int], number: int, bounds: tuple[int | None, int | None],
        lost: list[LostRange],
    ) -> Iterator[tuple[int, list[Any]]]:
        """The rows of one leaf page; a row that cannot be read is listed in ``lost``."""
        for offset in pointers:
            rowid = None
            try:
                size, at = _varint(page, offset)
                rowid, at = _varint(page, at)
                row = (_signed(rowid), self._payload(page, at, size))
            except (BadPage, struct.error, IndexError, UnicodeDecodeError) as exc:
                # One row lost: its own rowid when it could be read, else the page's range.
                if rowid is None:
                    lost.append(LostRange(*bounds, number, f"a row: {exc}"))
                else:
                    gone = _signed(rowid)
                    lost.append(LostRange(gone - 1, gone, number, f"row {gone}: {exc}"))
                continue
            yield row

    def _walk(
        self, number: int, lo: int | None, hi: int | None, lost: list[LostRange], seen: set[int]
    ) -> Iterator[tuple[int, list[Any]]]:
        try:
            if number in seen:
                raise BadPage(f"page {number} appears twice in the tree")
            seen.add(number)
            page = self.page(number)
            base = 100 if number == 1 else 0
            kind = page[base]
            if kind not in (_LEAF_TABLE, _INTERIOR_TABLE):
                raise BadPage(f"page {number} is not a table b-tree page (type {kind})")
            cells = struct.unpack_from(">H", page, base + 3)[0]
            header = 8 if kind == _LEAF_TABLE else 12
            pointers = [
                struct.unpack_from(">H", page, base + header + 2 * i)[0] for i in range(cells)
            ]
        except (BadPage, struct.error, IndexError) as exc:
            lost.append(LostRange(lo, hi, number, str(exc)))
            return
        if kind == _LEAF_TABLE:
            yield from self._leaf_rows(page, pointers, number, (lo, hi), lost)
            return
        low = lo
        for offset in pointers:
            try:
                child = struct.unpack_from(">I", page, offset)[0]
                key, _ = _varint(page, offset + 4)
            except (struct.error, IndexError) as exc:
                lost.append(LostRange(lo, hi, number, str(exc)))
                return
            yield from self._walk(child, low, key, lost, seen)
            low = key
        try:
            right = struct.unpack_from(">I", page, base + 8)[0]
        except struct.error as exc:
            lost.append(LostRange(low, hi, number, str(exc)))
            return
        yield from self._walk(right, low, hi, lost, seen)

    def _payload(self, page: bytes, offset: int, size: int) -> list[Any]:
        local = self._local_size(size)
        payload = page[offset : offset + local]
        if len(payload) != local:
            raise BadPage("cell runs past its page")
        if local < size:
            payload += self._overflow(struct.unpack_from(">I", page, offset + local)[0],
                                      size - local)
        return _record(payload)

    def _local_size(self, size: int) -> int:
        usable = self.usable
        most = usable - 35
        if size <= most:
            return size
        least = (usable - 12) * 32 // 255 - 23
        local = least + (size - least) % (usable - 4)
        return local if local <= most else least

    def _overflow(self, number: int, remaining: int) -> bytes:
        parts = []
        seen: set[int] = set()
        while remaining > 0:
            if number in seen:
                raise BadPage(f"overflow page {number} loops")
            seen.add(number)
            page = self.page(number)  # BadPage when the chain leads past the end
            chunk = page[4 : 4 + min(remaining, self.usable - 4)]
            if len(chunk) < min(remaining, self.usable - 4):
                raise BadPage(f"overflow page {number} is cut short")
            parts.append(chunk)
            remaining -= len(chunk)
            number = struct.unpack_from(">I", page, 0)[0]
        return b"".join(parts)


def _varint(buf: bytes, offset: int) -> tuple[int, int]:
    value = 0
    for i in range(9):
        byte = buf[offset + i]
        if i == 8:
            return (value << 8) | byte, offset + 9
        value = (value << 7) | (byte & 0x7F)
        if byte < 0x80:
            return value, offset + i + 1
    raise AssertionError("unreachable")


def _signed(value: int) -> int:
    return value - (1 << 64) if value >= 1 << 63 else value


_INT_SIZES = {1: 1, 2: 2, 3: 3, 4: 4, 5: 6, 6: 8}


def _record(payload: bytes) -> list[Any]:
    """The values of one record (https://sqlite.org/fileformat2.html#record_format)."""
    header_size, offset = _varint(payload, 0)
    types = []
    while offset < header_size:
        serial, offset = _varint(payload, offset)
        types.append(serial)
    body = header_size
    values: list[Any] = []
    for serial in types:
        if serial == 0:
            values.append(None)
        elif serial in _INT_SIZES:
            n = _INT_SIZES[serial]
            values.append(int.from_bytes(payload[body : body + n], "big", signed=True))
            body += n
        elif serial == 7:
            values.append(struct.unpack_from(">d", payload, body)[0])
            body += 8
        elif serial in (8, 9):
            values.append(serial - 8)
        elif serial >= 12:
            n = (serial - 12) // 2
            chunk = payload[body : body + n]
            if len(chunk) != n:
                raise BadPage("record runs past its payload")
            values.append(bytes(chunk) if serial % 2 == 0 else chunk.decode("utf-8"))
            body += n
        else:
            raise BadPage(f"record has reserved serial type {serial}")
    return values
