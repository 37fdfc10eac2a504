"""The queue's tables (SQLAlchemy Core). Migrations in ``queue/migrations/`` must match these.

Why these shapes:

* ``files.page_id`` is unique so enqueueing the same upload twice is one row; the M-id is
  derived (``M`` + page id), never stored.
* ``candidates`` has one row per (file, item), unique. Its state is also the negative memory:
  a ``rejected`` row is never proposed again, and the unique index makes that lookup one
  index probe.
* ``decisions`` and ``edits`` are append-only audit trails; current state lives on the
  candidate row.
* ``claimed_by``/``claimed_at`` are leases: a stage claims rows, works, and the state change
  clears the lease; a crashed worker's lease expires so its rows come back.
"""

from __future__ import annotations

from typing import Any, Dict

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    Column,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    UniqueConstraint,
)

# Deterministic constraint names so migrations behave the same on every backend.
NAMING = {
    "ix": "ix_%(table_name)s_%(column_0_N_name)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}

metadata = MetaData(naming_convention=NAMING)

# MariaDB's default character set may be latin1; titles and labels come in every script.
# Binary collation because wiki titles are case-sensitive.
MYSQL_TABLE_OPTIONS: Dict[str, Any] = {
    "mysql_engine": "InnoDB",
    "mysql_charset": "utf8mb4",
    "mysql_collate": "utf8mb4_bin",
}

# Bigger than Commons' page ids will ever be; SQLite needs INTEGER for autoincrement keys.
Id = BigInteger().with_variant(Integer(), "sqlite")

files = Table(
    "files",
    metadata,
    Column("id", Id, primary_key=True, autoincrement=True),
    Column("page_id", BigInteger, nullable=False, unique=True),
    Column("title", String(255), nullable=False),
    Column("sha1", String(40), nullable=False, default=""),
    Column("uploaded_at", DateTime, nullable=True),
    Column("uploader", String(255), nullable=False, default=""),
    Column("log_id", BigInteger, nullable=False, default=0),
    Column("mime", String(100), nullable=False, default=""),
    Column("size", BigInteger, nullable=False, default=0),
    Column("width", Integer, nullable=False, default=0),
    Column("height", Integer, nullable=False, default=0),
    Column("state", String(20), nullable=False),
    Column("reason", Text, nullable=True),
    # What the fetcher learned (thumbnail URL, description, categories, existing P180,
    # revision id, protection, bots opt-out) as one JSON document.
    Column("media", JSON, nullable=True),
    Column("attempts", Integer, nullable=False, default=0),
    Column("claimed_by", String(64), nullable=True),
    Column("claimed_at", DateTime, nullable=True),
    Column("discovered_at", DateTime, nullable=False),
    Column("updated_at", DateTime, nullable=False),
    Index("ix_files_state_id", "state", "id"),
    Index("ix_files_title", "title"),
    # Review filters and the daemon's "files handled in the last hour".
    Index("ix_files_uploaded_at", "uploaded_at"),
    Index("ix_files_updated_at", "updated_at"),
    **MYSQL_TABLE_OPTIONS,
)

candidates = Table(
    "candidates",
    metadata,
    Column("id", Id, primary_key=True, autoincrement=True),
    Column("file_id", Id, ForeignKey("files.id", ondelete="CASCADE"), nullable=False),
    Column("qid", String(20), nullable=False),
    Column("score", Float, nullable=True),
    Column("rank", Integer, nullable=True),
    Column("linker", String(64), nullable=False, default=""),
    # e.g. "naive-mlp/v1 ViT-B-32:laion2b_s34b_b79k ckpt:<sha12>" and "sha256:<64 hex>"
    Column("linker_version", String(200), nullable=False, default=""),
    Column("labelset_hash", String(100), nullable=False, default=""),
    Column("evidence", JSON, nullable=True),
    Column("state", String(20), nullable=False),
    Column("prominent", Integer, nullable=False, default=0),
    Column("reviewer", String(255), nullable=True),
    Column("attempts", Integer, nullable=False, default=0),
    Column("retry_after", DateTime, nullable=True),
    # When a dry run last simulated this approved pair (None: not since its approval). A dry
    # run never changes the state: the pair stays approved for a later real write.
    Column("simulated_at", DateTime, nullable=True),
    Column("claimed_by", String(64), nullable=True),
    Column("claimed_at", DateTime, nullable=True),
    Column("created_at", DateTime, nullable=False),
    Column("updated_at", DateTime, nullable=False),
    UniqueConstraint("file_id", "qid"),
    Index("ix_candidates_state_id", "state", "id"),
    **MYSQL_TABLE_OPTIONS,
)

decisions = Table(
    "decisions",
    metadata,
    Column("id", Id, primary_key=True, autoincrement=True),
    Column("candidate_id", Id, ForeignKey("candidates.id", ondelete="CASCADE"), nullable=False),
    Column("action", String(20), nullable=False),
    Column("reviewer", String(255), nullable=False),
    # terminal | cli | import | web
    Column("source", String(20), nullable=False),
    # The candidate state before the decision, so an undo can restore it.
    Column("previous_state", String(20), nullable=False),
    Column("decided_at", DateTime, nullable=False),
    # An operator's override: the reviewer whose decision this one replaced (else NULL).
    Column("overrode", String(255), nullable=True),
    Index("ix_decisions_candidate_id", "candidate_id"),
    **MYSQL_TABLE_OPTIONS,
)

edits = Table(
    "edits",
    metadata,
    Column("id", Id, primary_key=True, autoincrement=True),
    Column("candidate_id", Id, ForeignKey("candidates.id", ondelete="CASCADE"), nullable=False),
    Column("batch_id", String(64), nullable=False),
    # written | skipped | failed | dry_run | reverted
    Column("outcome", String(20), nullable=False),
    Column("revid", BigInteger, nullable=True),
    Column("statement_id", String(100), nullable=True),
    # A written statement's rank (normal | preferred; NULL for other outcomes and old rows):
    # a pair whose last decision asks for another rank is owed a follow-up edit.
    Column("rank", String(10), nullable=True),
    Column("error", Text, nullable=True),
    Column("attempt", Integer, nullable=False, default=1),
    Column("started_at", DateTime, nullable=False),
    Column("finished_at", DateTime, nullable=False),
    Index("ix_edits_batch_id", "batch_id"),
    Index("ix_edits_finished_at", "finished_at"),
    Index("ix_edits_candidate_id", "candidate_id"),
    **MYSQL_TABLE_OPTIONS,
)

# Every write request, recorded (committed) before it leaves: the statement GUID it adds for
# one pair, its batch and when it was sent. MediaWiki finishes a POST after the client hung
# up, so an edit whose answer never came (a timeout, a kill -9) may land minutes later; such
# a send stays *unsettled* (``settled_at`` NULL) until a re-read of the file decides it:
# its GUID shows up (recorded ``written`` as applied late, then the pair's last decision is
# honoured by a follow-up) or the horizon passes without it (``not_applied``). A ``written``
# edits row for the GUID settles it as ``applied`` in the same transaction; an error answer
# marks it ``answered_at``, so a re-read settles it at once.
sends = Table(
    "sends",
    metadata,
    Column("id", Id, primary_key=True, autoincrement=True),
    Column("candidate_id", Id, ForeignKey("candidates.id", ondelete="CASCADE"), nullable=False),
    Column("statement_id", String(100), nullable=False),
    Column("batch_id", String(64), nullable=False),
    Column("worker", String(200), nullable=False),
    Column("sent_at", DateTime, nullable=False),
    Column("answered_at", DateTime, nullable=True),
    Column("settled_at", DateTime, nullable=True),
    # applied | applied_late | not_applied (NULL while unsettled)
    Column("settled_as", String(20), nullable=True),
    Column("revid", BigInteger, nullable=True),
    Index("ix_sends_settled_at", "settled_at"),
    Index("ix_sends_candidate_id", "candidate_id"),
    **MYSQL_TABLE_OPTIONS,
)

cursors = Table(
    "cursors",
    metadata,
    Column("source", String(64), primary_key=True),
    Column("timestamp", DateTime, nullable=False),
    Column("log_id", BigInteger, nullable=False),
    Column("updated_at", DateTime, nullable=False),
    **MYSQL_TABLE_OPTIONS,
)

# What the daemon reports about itself for `status` run from another process: writing
# paused and why, last poll, recent errors. One JSON document per name.
daemon_state = Table(
    "daemon_state",
    metadata,
    Column("name", String(64), primary_key=True),
    Column("value", JSON, nullable=False),
    Column("updated_at", DateTime, nullable=False),
    **MYSQL_TABLE_OPTIONS,
)

# Commons evidence resolved once for every file that shares it (wikivel_bot.commons.evidence):
# "category:Eiffel Tower", "link:enwiki:Eiffel Tower", "id:P359:518452", "item:Q243" → the
# item, or NULL for "resolved to no item". Rows expire so an edit on the wiki (a category
# linked later) is seen again; an expired row is simply overwritten.
EVIDENCE_KEY_LENGTH = 512  # utf8mb4: 2 KB, inside InnoDB's 3 KB index limit
evidence_cache = Table(
    "evidence_cache",
    metadata,
    Column("key", String(EVIDENCE_KEY_LENGTH), primary_key=True),
    Column("qid", String(20), nullable=True),
    Column("expires_at", DateTime, nullable=False),
    **MYSQL_TABLE_OPTIONS,
)

# Logins to the web review (wikivel_bot.web.sessions): the browser's cookie carries a random
# id, the row its SHA-256, so the server ends a login (logout, absolute expiry) for every web
# worker at once, and a copied cookie is worth nothing afterwards. The wiki profile (groups,
# blocked) is re-read every few minutes and kept here with the time it was read.
web_sessions = Table(
    "web_sessions",
    metadata,
    Column("id", String(64), primary_key=True),
    Column("user_name", String(255), nullable=False),
    Column("user_id", String(32), nullable=False),
    Column("user_groups", JSON, nullable=False),
    Column("blocked", Boolean, nullable=False),
    # The wiki's block reason (list=users' blockreason), shown to the blocked reviewer.
    Column("block_reason", Text),
    Column("created_at", DateTime, nullable=False),
    Column("expires_at", DateTime, nullable=False, index=True),
    Column("checked_at", DateTime, nullable=False),
    # When a re-read of the profile last failed (the wiki down); NULL once a read succeeds.
    # The wiki is asked again only a short while later, not on every request of the login.
    Column("check_failed_at", DateTime),
    # A partial block's restrictions (the web's PartialBlock as JSON: block ids, pages,
    # namespaces, actions); NULL without a block or with a sitewide one.
    Column("block_restrictions", JSON),
    **MYSQL_TABLE_OPTIONS,
)
