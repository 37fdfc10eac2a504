"""evidence cache: what a category, link or identifier resolved to, until it expires

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-25

Commons' own evidence (docs/evidence.md) asks Commons and Wikidata which item a category,
a description link or an identifier names. One category is shared by thousands of uploads,
so the answer — an item, or NULL for "no item" — is kept here with an expiry.
"""

from __future__ import annotations

from typing import Any, Dict

import sqlalchemy as sa
from alembic import op

# Frozen here, not imported: a migration must not change when the application code does.
MYSQL_TABLE_OPTIONS: Dict[str, Any] = {"mysql_engine": "InnoDB", "mysql_charset": "utf8mb4", "mysql_collate": "utf8mb4_bin"}

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "evidence_cache",
        sa.Column("key", sa.String(length=512), nullable=False),
        sa.Column("qid", sa.String(length=20), nullable=True),
        sa.Column("expires_at", sa.DateTime(), nullable=False),
        sa.PrimaryKeyConstraint("key", name=op.f("pk_evidence_cache")),
        **MYSQL_TABLE_OPTIONS,
    )


def downgrade() -> None:
    op.drop_table("evidence_cache")
