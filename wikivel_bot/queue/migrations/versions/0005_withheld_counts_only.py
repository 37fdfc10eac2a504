"""withheld suggestions are kept as counts by rule only: old per-item records are stripped

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-25

Before this revision the link stage stored, in each file's media document under
``withheld``, every item the safety rules withheld with its QID, rule, reason and score: the
database said "this photo shows person X", the very inference the rules exist to keep from
leaking. Now only ``{rule: n}`` is stored; this revision turns each old list into its counts.

Data only (no DDL): offline (``--sql``) it emits nothing but the version, as there is no row
to read; run ``wikivel-bot db upgrade`` against the database to strip the old records.
Downgrade keeps the counts (the identities are gone for good, as intended); the code before
this revision reads a counts document as "nothing withheld".
"""

from __future__ import annotations

from typing import Any, Dict

import sqlalchemy as sa
from alembic import context, op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None

# Files read per query: the media documents of a large queue are walked in pieces.
CHUNK = 1000


def counts_of(record: Any) -> Dict[str, int]:
    """``{rule: n}`` of an old per-item list; a counts document as it is (stdlib only: a
    migration does not import the package's code, which changes after it)."""
    counts: Dict[str, int] = {}
    if isinstance(record, dict):
        return {str(rule): n for rule, n in record.items() if isinstance(n, int) and n > 0}
    for entry in record if isinstance(record, list) else ():
        rule = str(entry.get("rule", "")) if isinstance(entry, dict) else ""
        if rule:
            counts[rule] = counts.get(rule, 0) + 1
    return counts


def upgrade() -> None:
    if context.is_offline_mode():
        return
    files = sa.table("files", sa.column("id", sa.Integer()), sa.column("media", sa.JSON()))
    conn = op.get_bind()
    after = 0
    while True:
        rows = conn.execute(
            sa.select(files.c.id, files.c.media).where(files.c.id > after, files.c.media.isnot(None))
            .order_by(files.c.id).limit(CHUNK)
        ).all()
        for row in rows:
            media = row.media
            if isinstance(media, dict) and isinstance(media.get("withheld"), list):
                conn.execute(files.update().where(files.c.id == row.id)
                             .values(media={**media, "withheld": counts_of(media["withheld"])}))
        if len(rows) < CHUNK:
            return
        after = int(rows[-1].id)


def downgrade() -> None:
    pass
