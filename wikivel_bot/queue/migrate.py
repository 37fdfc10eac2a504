"""Alembic, driven from code: upgrade, downgrade, current revision and schema snapshots.

The migration scripts live in the top-level ``migrations/`` folder (next to ``alembic.ini``,
so plain ``alembic`` works too). The package is installed in editable mode by the Makefile;
a copy installed elsewhere finds them through ``$WIKIVEL_MIGRATIONS``.
"""

from __future__ import annotations

import io
import os
from pathlib import Path
from typing import Optional

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from alembic.util import CommandError
from sqlalchemy.engine import Engine
from sqlalchemy.exc import DBAPIError

from wikivel_bot.errors import DatabaseUnavailable, SchemaOutdated, UsageError
from wikivel_bot.queue.engine import redacted_url

# The backends a schema snapshot is kept for, with a URL whose dialect renders their DDL.
SNAPSHOT_DIALECTS = {
    "sqlite": "sqlite://",
    "postgresql": "postgresql+psycopg://",
    "mysql": "mysql+pymysql://",
}


def migrations_dir() -> Path:
    """Where the Alembic scripts are."""
    override = os.environ.get("WIKIVEL_MIGRATIONS")
    path = Path(override) if override else Path(__file__).resolve().parents[2] / "migrations"
    if not (path / "env.py").is_file():
        raise SchemaOutdated(
            f"migration scripts not found in {path}; install wikivel-bot from its source "
            "tree (pip install -e .) or set WIKIVEL_MIGRATIONS"
        )
    return path


def alembic_config(engine: Optional[Engine] = None, url: str = "") -> Config:
    """An Alembic Config; with ``engine`` the migrations run on that engine's connection."""
    cfg = Config()
    cfg.set_main_option("script_location", str(migrations_dir()))
    if engine is not None:
        url = engine.url.render_as_string(hide_password=False)
    # ConfigParser interpolation: a literal % in a password must be doubled.
    cfg.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    return cfg


def head_revision() -> str:
    """The newest migration's revision id."""
    head = ScriptDirectory.from_config(alembic_config()).get_current_head()
    assert head is not None, "migrations/versions is empty"
    return head


def current_revision(engine: Engine) -> Optional[str]:
    """The database's revision, None for an empty database."""
    try:
        with engine.connect() as conn:
            return MigrationContext.configure(conn).get_current_revision()
    except DBAPIError as exc:
        raise DatabaseUnavailable(f"cannot connect to {redacted_url(engine)}: {exc.orig}") from None


def upgrade(engine: Engine, revision: str = "head") -> None:
    """Migrate the database up to ``revision``."""
    _run(engine, command.upgrade, revision)


def downgrade(engine: Engine, revision: str = "base") -> None:
    """Migrate the database down to ``revision`` (``base`` = empty)."""
    _run(engine, command.downgrade, revision)


def check_at_head(engine: Engine) -> None:
    """Raise SchemaOutdated unless the database is at the newest migration."""
    current, head = current_revision(engine), head_revision()
    if current != head:
        raise SchemaOutdated(
            f"the queue database {redacted_url(engine)} is at revision {current or 'none (empty)'}, "
            f"not {head}: run `wikivel-bot db upgrade`"
        )


def schema_sql(dialect: str) -> str:
    """The DDL of every migration up to head, as Alembic's offline mode renders it."""
    buffer = io.StringIO()
    cfg = alembic_config(url=SNAPSHOT_DIALECTS[dialect])
    cfg.output_buffer = buffer
    command.upgrade(cfg, "head", sql=True)
    return buffer.getvalue()


def _run(engine: Engine, action: object, revision: str) -> None:
    cfg = alembic_config(engine)
    try:
        with engine.begin() as conn:
            cfg.attributes["connection"] = conn
            action(cfg, revision)  # type: ignore[operator]
    except DBAPIError as exc:
        raise DatabaseUnavailable(f"migrating {redacted_url(engine)} failed: {exc.orig}") from None
    except CommandError as exc:
        # Alembic's message for a revision it does not know ("Can't locate revision
        # identified by '9999'"); name the known ones so the fix is in the line.
        known = ", ".join(s.revision for s in reversed(list(ScriptDirectory.from_config(cfg).walk_revisions())))
        raise UsageError(
            f"cannot migrate {redacted_url(engine)} to {revision!r}: {exc} "
            f"(known revisions: {known}, head, base)"
        ) from None
