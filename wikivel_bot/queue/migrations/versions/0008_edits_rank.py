"""edits.rank: the rank a written statement was given, so a later decision can be honoured

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-25

A reviewer may switch a pair to prominent (or back) while its edit is already on its way to
the wiki. The writer then owes a follow-up edit that sets the rank the last decision asks
for; to find such pairs without reading the wiki, each ``written`` row keeps the rank it
gave the statement (``normal`` or ``preferred``). NULL for older rows and for every other
outcome: their rank is unknown and no follow-up is derived from it.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("edits") as batch:
        batch.add_column(sa.Column("rank", sa.String(10), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("edits") as batch:
        batch.drop_column("rank")
