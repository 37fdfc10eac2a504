"""sends: every write request recorded before it leaves, settled by its answer or a re-read

Revision ID: 0011
Revises: 0010
Create Date: 2026-11-28

MediaWiki finishes a POST after the client hung up, so a write whose answer never came (a
timeout, a process killed after the wiki saved) may land after the writer recorded a
failure, or after a reviewer rejected the pair. The writer now records each statement it is
about to send (``sends``) and leaves the row unsettled until the answer, or a later re-read
of the file, decides whether it was applied. Existing queues have no such rows: the table
starts empty.
"""

from __future__ import annotations

from typing import Any, Dict

import sqlalchemy as sa
from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None

Id = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
MYSQL: Dict[str, Any] = {"mysql_engine": "InnoDB", "mysql_charset": "utf8mb4", "mysql_collate": "utf8mb4_bin"}


def upgrade() -> None:
    op.create_table(
        "sends",
        sa.Column("id", Id, primary_key=True, autoincrement=True),
        sa.Column("candidate_id", Id, sa.ForeignKey("candidates.id", ondelete="CASCADE",
                                                    name="fk_sends_candidate_id_candidates"),
                  nullable=False),
        sa.Column("statement_id", sa.String(100), nullable=False),
        sa.Column("batch_id", sa.String(64), nullable=False),
        sa.Column("worker", sa.String(200), nullable=False),
        sa.Column("sent_at", sa.DateTime(), nullable=False),
        sa.Column("answered_at", sa.DateTime(), nullable=True),
        sa.Column("settled_at", sa.DateTime(), nullable=True),
        sa.Column("settled_as", sa.String(20), nullable=True),
        sa.Column("revid", sa.BigInteger(), nullable=True),
        sa.PrimaryKeyConstraint("id", name="pk_sends"),
        **MYSQL,
    )
    op.create_index("ix_sends_settled_at", "sends", ["settled_at"])
    op.create_index("ix_sends_candidate_id", "sends", ["candidate_id"])


def downgrade() -> None:
    # Its indexes go with it (MariaDB refuses to drop the foreign key's index first).
    op.drop_table("sends")
