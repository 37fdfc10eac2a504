"""initial queue schema: files, candidates, decisions, edits, cursors

Revision ID: 0001
Revises: 
Create Date: 2026-11-21
"""

from __future__ import annotations

from typing import Any, Dict

import sqlalchemy as sa
from alembic import op

# Frozen here, not imported: a migration must not change when the application code does.
MYSQL_TABLE_OPTIONS: Dict[str, Any] = {"mysql_engine": "InnoDB", "mysql_charset": "utf8mb4", "mysql_collate": "utf8mb4_bin"}

revision = '0001'
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('cursors',
    sa.Column('source', sa.String(length=64), nullable=False),
    sa.Column('timestamp', sa.DateTime(), nullable=False),
    sa.Column('log_id', sa.BigInteger(), nullable=False),
    sa.Column('updated_at', sa.DateTime(), nullable=False),
    sa.PrimaryKeyConstraint('source', name=op.f('pk_cursors')),
    **MYSQL_TABLE_OPTIONS,
    )
    op.create_table('files',
    sa.Column('id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), autoincrement=True, nullable=False),
    sa.Column('page_id', sa.BigInteger(), nullable=False),
    sa.Column('title', sa.String(length=255), nullable=False),
    sa.Column('sha1', sa.String(length=40), nullable=False),
    sa.Column('uploaded_at', sa.DateTime(), nullable=True),
    sa.Column('uploader', sa.String(length=255), nullable=False),
    sa.Column('log_id', sa.BigInteger(), nullable=False),
    sa.Column('mime', sa.String(length=100), nullable=False),
    sa.Column('size', sa.BigInteger(), nullable=False),
    sa.Column('width', sa.Integer(), nullable=False),
    sa.Column('height', sa.Integer(), nullable=False),
    sa.Column('state', sa.String(length=20), nullable=False),
    sa.Column('reason', sa.Text(), nullable=True),
    sa.Column('media', sa.JSON(), nullable=True),
    sa.Column('attempts', sa.Integer(), nullable=False),
    sa.Column('claimed_by', sa.String(length=64), nullable=True),
    sa.Column('claimed_at', sa.DateTime(), nullable=True),
    sa.Column('discovered_at', sa.DateTime(), nullable=False),
    sa.Column('updated_at', sa.DateTime(), nullable=False),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_files')),
    sa.UniqueConstraint('page_id', name=op.f('uq_files_page_id')),
    **MYSQL_TABLE_OPTIONS,
    )
    op.create_index('ix_files_state_id', 'files', ['state', 'id'])
    op.create_index('ix_files_title', 'files', ['title'])

    op.create_table('candidates',
    sa.Column('id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), autoincrement=True, nullable=False),
    sa.Column('file_id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=False),
    sa.Column('qid', sa.String(length=20), nullable=False),
    sa.Column('score', sa.Float(), nullable=True),
    sa.Column('rank', sa.Integer(), nullable=True),
    sa.Column('linker', sa.String(length=64), nullable=False),
    sa.Column('linker_version', sa.String(length=200), nullable=False),
    sa.Column('labelset_hash', sa.String(length=100), nullable=False),
    sa.Column('evidence', sa.JSON(), nullable=True),
    sa.Column('state', sa.String(length=20), nullable=False),
    sa.Column('prominent', sa.Integer(), nullable=False),
    sa.Column('reviewer', sa.String(length=255), nullable=True),
    sa.Column('attempts', sa.Integer(), nullable=False),
    sa.Column('retry_after', sa.DateTime(), nullable=True),
    sa.Column('claimed_by', sa.String(length=64), nullable=True),
    sa.Column('claimed_at', sa.DateTime(), nullable=True),
    sa.Column('created_at', sa.DateTime(), nullable=False),
    sa.Column('updated_at', sa.DateTime(), nullable=False),
    sa.ForeignKeyConstraint(['file_id'], ['files.id'], name=op.f('fk_candidates_file_id_files'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_candidates')),
    sa.UniqueConstraint('file_id', 'qid', name=op.f('uq_candidates_file_id_qid')),
    **MYSQL_TABLE_OPTIONS,
    )
    op.create_index('ix_candidates_state_id', 'candidates', ['state', 'id'])

    op.create_table('decisions',
    sa.Column('id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), autoincrement=True, nullable=False),
    sa.Column('candidate_id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=False),
    sa.Column('action', sa.String(length=20), nullable=False),
    sa.Column('reviewer', sa.String(length=255), nullable=False),
    sa.Column('source', sa.String(length=20), nullable=False),
    sa.Column('previous_state', sa.String(length=20), nullable=False),
    sa.Column('decided_at', sa.DateTime(), nullable=False),
    sa.ForeignKeyConstraint(['candidate_id'], ['candidates.id'], name=op.f('fk_decisions_candidate_id_candidates'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_decisions')),
    **MYSQL_TABLE_OPTIONS,
    )
    op.create_index('ix_decisions_candidate_id', 'decisions', ['candidate_id'])

    op.create_table('edits',
    sa.Column('id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), autoincrement=True, nullable=False),
    sa.Column('candidate_id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=False),
    sa.Column('batch_id', sa.String(length=64), nullable=False),
    sa.Column('outcome', sa.String(length=20), nullable=False),
    sa.Column('revid', sa.BigInteger(), nullable=True),
    sa.Column('statement_id', sa.String(length=100), nullable=True),
    sa.Column('error', sa.Text(), nullable=True),
    sa.Column('attempt', sa.Integer(), nullable=False),
    sa.Column('started_at', sa.DateTime(), nullable=False),
    sa.Column('finished_at', sa.DateTime(), nullable=False),
    sa.ForeignKeyConstraint(['candidate_id'], ['candidates.id'], name=op.f('fk_edits_candidate_id_candidates'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_edits')),
    **MYSQL_TABLE_OPTIONS,
    )
    op.create_index('ix_edits_batch_id', 'edits', ['batch_id'])
    op.create_index('ix_edits_candidate_id', 'edits', ['candidate_id'])



def downgrade() -> None:
    # Dropping a table drops its indexes; children first because of the foreign keys.
    for table in ("edits", "decisions", "candidates", "files", "cursors"):
        op.drop_table(table)
