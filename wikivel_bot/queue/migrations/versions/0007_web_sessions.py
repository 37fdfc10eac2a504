"""web sessions: logins the server can end (logout, absolute lifetime) on every worker

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-25

The web review kept its login only in Flask's signed cookie: logout deleted the browser's
copy, and a saved copy went on deciding. Now the cookie carries a random id and this table
its SHA-256, the user's wiki profile (groups, blocked and why) and when it was last read; a row
deleted or past ``expires_at`` is a login that has ended, for every web worker at once.
"""

from __future__ import annotations

from typing import Any, Dict

import sqlalchemy as sa
from alembic import op

# Frozen here, not imported: a migration must not change when the application code does.
MYSQL_TABLE_OPTIONS: Dict[str, Any] = {"mysql_engine": "InnoDB", "mysql_charset": "utf8mb4", "mysql_collate": "utf8mb4_bin"}

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "web_sessions",
        sa.Column("id", sa.String(length=64), nullable=False),
        sa.Column("user_name", sa.String(length=255), nullable=False),
        sa.Column("user_id", sa.String(length=32), nullable=False),
        sa.Column("user_groups", sa.JSON(), nullable=False),
        sa.Column("blocked", sa.Boolean(), nullable=False),
        sa.Column("block_reason", sa.Text(), nullable=True),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("expires_at", sa.DateTime(), nullable=False),
        sa.Column("checked_at", sa.DateTime(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_web_sessions")),
        **MYSQL_TABLE_OPTIONS,
    )
    op.create_index("ix_web_sessions_expires_at", "web_sessions", ["expires_at"])


def downgrade() -> None:
    op.drop_index("ix_web_sessions_expires_at", table_name="web_sessions")
    op.drop_table("web_sessions")
