"""A store's pages as SQLite reads them: the main file, with the pages committed in its
write-ahead log (``-wal``) over it.

A store stopped by a full disk, a kill or a power cut keeps its last transactions in the
``-wal`` file until the next writer folds them in; judged on the main file alone, those pages
look lost. This reads the log as SQLite's recovery does (https://sqlite.org/fileformat2.html,
"The WAL File Format"): frames are taken in order while their salts match the header's and
their running checksum holds; the pages of the last valid commit frame and all before it
count, the newest copy of a page winning; anything after (a frame cut by the full disk) does
not, as SQLite itself would drop it.
"""

from __future__ import annotations

import mmap
import struct
from dataclasses import dataclass
from pathlib import Path

from hilbench.store.pages import BadPage, PageReader

WAL_HEADER = 32
FRAME_HEADER = 24
_MAGIC = {0x377F0682: "<", 0x377F0683: ">"}  # the checksum's word order: little, big endian


@dataclass
class WalFrames:
    """The committed content of a ``-wal`` file."""

    data: bytes | mmap.mmap
    page_size: int
    pages: dict[int, int]  # page number -> offset of its newest committed copy in ``data``
    db_pages: int  # the database's size in pages after the last commit

    @property
    def frames(self) -> int:
        return len(self.pages)


def _checksum(data: bytes | memoryview, order: str, s0: int, s1: int) -> tuple[int, int]:
    for x0, x1 in struct.iter_unpack(f"{order}II", data):
        s0 = (s0 + x0 + s1) & 0xFFFFFFFF
        s1 = (s1 + x1 + s0) & 0xFFFFFFFF
    return s0, s1


def read_wal(path: Path) -> WalFrames | None:
    """The committed frames of the write-ahead log at ``path``; None when there is none (no
    file, empty, not a log, or no commit in it)."""
    try:
        with path.open("rb") as fh:
            size = fh.seek(0, 2)
            if size < WAL_HEADER + FRAME_HEADER:
                return None
            data = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
    except OSError:
        return None
    magic, _version, page_size, _seq, salt1, salt2, c0, c1 = struct.unpack_from(">8I", data)
    order = _MAGIC.get(magic)
    if order is None or page_size < 512 or page_size & (page_size - 1):
        return None
    s0, s1 = _checksum(memoryview(data)[:24], order, 0, 0)
    if (s0, s1) != (c0, c1):
        return None
    committed: dict[int, int] = {}
    pending: dict[int, int] = {}
    db_pages = 0
    offset = WAL_HEADER
    view = memoryview(data)
    while offset + FRAME_HEADER + page_size <= size:
        number, commit, f_salt1, f_salt2, f_c0, f_c1 = struct.unpack_from(">6I", data, offset)
        if (f_salt1, f_salt2) != (salt1, salt2) or number == 0:
            break
        s0, s1 = _checksum(view[offset : offset + 8], order, s0, s1)
        s0, s1 = _checksum(view[offset + FRAME_HEADER : offset + FRAME_HEADER + page_size],
                           order, s0, s1)
        if (s0, s1) != (f_c0, f_c1):
            break
        pending[number] = offset + FRAME_HEADER
        if commit:
            committed.update(pending)
            pending.clear()
            db_pages = commit
        offset += FRAME_HEADER + page_size
    view.release()
    if not db_pages:
        data.close()
        return None
    return WalFrames(data, page_size, committed, db_pages)


class WalPageReader(PageReader):
    """A :class:`PageReader` that sees the pages committed in ``wal`` over the main file's."""

    def __init__(self, path: Path, wal: WalFrames) -> None:
        self.wal = wal
        super().__init__(path)
        if self.page_size != wal.page_size:
            raise BadPage(f"{path}-wal has {wal.page_size}-byte pages, the store "
                          f"{self.page_size}-byte pages: not this store's log")
        self.main_pages = self.pages_in_file
        self.pages_expected = wal.db_pages
        self.pages_in_file = min(self.main_pages, wal.db_pages) + sum(
            1 for n in wal.pages if self.main_pages < n <= wal.db_pages)

    def page(self, number: int) -> bytes:
        start = self.wal.pages.get(number) if number <= self.wal.db_pages else None
        if start is not None:
            return self.wal.data[start : start + self.page_size]
        if not 1 <= number <= self.pages_expected:
            raise BadPage(f"page {number} is past the end of the database "
                          f"({self.pages_expected} pages)")
        if number > self.main_pages:
            raise BadPage(f"page {number} is neither in the file ({self.main_pages} pages) "
                          "nor in its -wal")
        return super().page(number)
