"""daemon state for status, indexes for time-based queries

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-21
"""

from __future__ import annotations

from typing import Any, Dict

import sqlalchemy as sa
from alembic import op

# Frozen here, not imported: a migration must not change when the application code does.
MYSQL_TABLE_OPTIONS: Dict[str, Any] = {"mysql_engine": "InnoDB", "mysql_charset": "utf8mb4", "mysql_collate": "utf8mb4_bin"}

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "daemon_state",
        sa.Column("name", sa.String(length=64), nullable=False),
        sa.Column("value", sa.JSON(), nullable=False),
        sa.Column("updated_at", sa.DateTime(), nullable=False),
        sa.PrimaryKeyConstraint("name", name=op.f("pk_daemon_state")),
        **MYSQL_TABLE_OPTIONS,
    )
    op.create_index("ix_files_uploaded_at", "files", ["uploaded_at"])
    op.create_index("ix_files_updated_at", "files", ["updated_at"])
    op.create_index("ix_edits_finished_at", "edits", ["finished_at"])


def downgrade() -> None:
    op.drop_index("ix_edits_finished_at", table_name="edits")
    op.drop_index("ix_files_updated_at", table_name="files")
    op.drop_index("ix_files_uploaded_at", table_name="files")
    op.drop_table("daemon_state")
