"""a dry run keeps the pair approved: candidates.simulated_at replaces the dry_run state

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-23

Before this revision a dry run moved an approved pair to ``dry_run``, and no command could
write it for real afterwards: every approval of a community trial was lost. Now the pair stays
``approved``; ``simulated_at`` records that a dry run already simulated it (so a dry-run daemon
does not simulate it again every cycle), and the dry-run outcome lives only in the ``edits``
audit trail. Existing ``dry_run`` rows go back to ``approved`` with ``simulated_at`` set.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("candidates") as batch:
        batch.add_column(sa.Column("simulated_at", sa.DateTime(), nullable=True))
    candidates = sa.table(
        "candidates",
        sa.column("state", sa.String(20)),
        sa.column("simulated_at", sa.DateTime()),
        sa.column("updated_at", sa.DateTime()),
        sa.column("claimed_by", sa.String(64)),
        sa.column("claimed_at", sa.DateTime()),
    )
    op.execute(
        candidates.update()
        .where(candidates.c.state == "dry_run")
        .values(state="approved", simulated_at=candidates.c.updated_at, claimed_by=None,
                claimed_at=None)
    )


def downgrade() -> None:
    # The old schema cannot say "approved and simulated" without losing the approval for real
    # writing, so simulated pairs stay approved; only the marker is dropped.
    with op.batch_alter_table("candidates") as batch:
        batch.drop_column("simulated_at")
