"""web_sessions.block_restrictions: a partial block's restrictions, kept with the login

Revision ID: 0010
Revises: 0009
Create Date: 2026-11-26

Any block on the wiki stopped a reviewer's decisions. A partial block (MediaWiki's
restrictions to pages, namespaces or actions) now takes only what it covers: all decisions
when it covers the File namespace or editing, the decisions on the File: pages it names
otherwise, nothing when it restricts other things. Its restrictions are read with the
profile and kept with the session (every web worker sees them) as JSON; NULL without a
block or with a sitewide one, so the existing rows need no value.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("web_sessions") as batch:
        batch.add_column(sa.Column("block_restrictions", sa.JSON(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("web_sessions") as batch:
        batch.drop_column("block_restrictions")
