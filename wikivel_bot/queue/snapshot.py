"""Write or check the schema snapshots in ``db/`` (``make schema`` / tests/test_migrations.py).

``python -m wikivel_bot.queue.snapshot --write`` regenerates ``db/schema.<backend>.sql`` from
the migrations; without ``--write`` it exits 1 when a snapshot is stale.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Dict

from wikivel_bot.queue.migrate import SNAPSHOT_DIALECTS, schema_sql

SNAPSHOT_DIR = Path(__file__).resolve().parents[2] / "db"


def snapshot_path(dialect: str) -> Path:
    return SNAPSHOT_DIR / f"schema.{dialect}.sql"


def stale_snapshots() -> Dict[str, str]:
    """{dialect: fresh SQL} for every snapshot that differs from what the migrations give."""
    stale = {}
    for dialect in SNAPSHOT_DIALECTS:
        fresh = schema_sql(dialect)
        path = snapshot_path(dialect)
        if not path.is_file() or path.read_text(encoding="utf-8") != fresh:
            stale[dialect] = fresh
    return stale


def main(argv: list) -> int:
    stale = stale_snapshots()
    if "--write" in argv:
        for dialect, sql in stale.items():
            snapshot_path(dialect).write_text(sql, encoding="utf-8")
            print(f"wrote {snapshot_path(dialect)}")
        return 0
    for dialect in stale:
        print(f"stale: {snapshot_path(dialect)} (run `make schema`)")
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
