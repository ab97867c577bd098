"""Write (or ``--check``) ``hilbench/store/head_schema.sql`` from a store the migrations build
step by step: the file a new SQLite store is made from (:mod:`hilbench.store.head_schema`)."""

from __future__ import annotations

import sqlite3
import sys
import tempfile
from pathlib import Path

from hilbench.store import head_schema
from hilbench.store.schema import SCHEMA_VERSION, open_store


def migrated_text() -> str:
    """The file's text as the migrations make it today."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "migrated.sqlite"
        open_store(path, "write", from_head=False).close()
        conn = sqlite3.connect(path)
        try:
            return head_schema.dump(conn, SCHEMA_VERSION)
        finally:
            conn.close()


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    text = migrated_text()
    if args == ["--check"]:
        current = head_schema.HEAD_SQL.read_text(encoding="utf-8") \
            if head_schema.HEAD_SQL.exists() else ""
        if current != text:
            print(f"{head_schema.HEAD_SQL} is stale: run `python -m "
                  "hilbench.store.make_head_schema`", file=sys.stderr)
            return 1
        print(f"{head_schema.HEAD_SQL}: current (schema {SCHEMA_VERSION})")
        return 0
    if args:
        print("usage: python -m hilbench.store.make_head_schema [--check]", file=sys.stderr)
        return 2
    head_schema.HEAD_SQL.write_text(text, encoding="utf-8")
    print(f"wrote {head_schema.HEAD_SQL} (schema {SCHEMA_VERSION})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
