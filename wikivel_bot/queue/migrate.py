"""Alembic, driven from code: upgrade, downgrade, current revision and schema snapshots.

The migration scripts live in ``migrations/`` next to this module, inside the package, so
every installation carries them: the editable one of the Makefile, and the plain
``pip install`` of Toolforge's buildpack alike (setup.cfg lists them as package data;
tests/test_wheel_install.py installs a built wheel and upgrades a queue with it). The
checkout's ``alembic.ini`` points at the same folder, so plain ``alembic`` works too.
"""

from __future__ import annotations

import io
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


# The Alembic scripts, shipped inside the package next to this module. A real folder rather
# than an importlib.resources Traversable: Alembic reads script_location as a filesystem path.
MIGRATIONS = Path(__file__).resolve().parent / "migrations"


def migrations_dir() -> Path:
    """Where the Alembic scripts are: inside the installed package, whatever installed it.

    Missing only when an installation dropped the package data (a wheel built from an older
    setup.cfg); reinstalling from a current checkout puts them back.
    """
    if not (MIGRATIONS / "env.py").is_file():
        raise SchemaOutdated(
            f"migration scripts not found in {MIGRATIONS}: this installation of wikivel-bot "
            "is incomplete; reinstall it from a current checkout "
            "(pip install --force-reinstall --no-deps PATH_TO_CHECKOUT)"
        )
    return MIGRATIONS


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
    assert head is not None, f"{migrations_dir() / 'versions'} is empty"
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
