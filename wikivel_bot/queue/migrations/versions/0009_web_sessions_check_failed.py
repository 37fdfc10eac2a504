"""web_sessions.check_failed_at: a failed profile re-check is remembered, so an outage is asked once

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-25

When the wiki could not be asked for a reviewer's profile (connection refused, 5xx, timeout),
nothing was kept: every later request of that login asked the wiki again, each page view
waiting for a wiki that was already down. Now the time of the failed read is kept with the
session (every web worker sees it), and the wiki is asked again only after a short pause;
a successful read sets it back to NULL.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("web_sessions") as batch:
        batch.add_column(sa.Column("check_failed_at", sa.DateTime(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("web_sessions") as batch:
        batch.drop_column("check_failed_at")
