"""decisions.overrode: an operator's decision over another reviewer's is recorded as such

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-25

A reviewer may no longer replace another reviewer's decision; an operator may, and the audit
trail must say so: ``overrode`` names the reviewer whose decision this one replaced (NULL for
every ordinary decision, so existing rows need no backfill). An undo of the override gives the
pair back to that reviewer.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("decisions") as batch:
        batch.add_column(sa.Column("overrode", sa.String(255), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("decisions") as batch:
        batch.drop_column("overrode")
