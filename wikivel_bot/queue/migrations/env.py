"""Alembic environment for the queue database.

Runs on a connection handed over by ``wikivel_bot.queue.migrate`` (so SQLite gets the same
pragmas as the application), or on a URL from ``-x url=``, ``sqlalchemy.url`` or wikivel-bot's
own settings when ``alembic`` is run by hand. ``render_as_batch`` lets SQLite, which cannot
ALTER most things, take the same migrations as the server databases.
"""

from __future__ import annotations

from logging.config import fileConfig

from alembic import context
from sqlalchemy.engine import Connection

from wikivel_bot.queue.tables import metadata

config = context.config
if config.config_file_name is not None:
    fileConfig(config.config_file_name, disable_existing_loggers=False)


def _url() -> str:
    url = context.get_x_argument(as_dictionary=True).get("url") or config.get_main_option("sqlalchemy.url")
    if not url:
        from wikivel_bot.config import load_settings

        url = load_settings().db.url
    return url


def run_offline() -> None:
    context.configure(
        url=_url(),
        target_metadata=metadata,
        literal_binds=True,
        dialect_opts={"paramstyle": "named"},
        render_as_batch=True,
    )
    with context.begin_transaction():
        context.run_migrations()


def run_online() -> None:
    connection = config.attributes.get("connection")
    if connection is None:
        from wikivel_bot.queue.engine import create_engine_for

        engine = create_engine_for(_url())
        with engine.begin() as connection:
            _migrate(connection)
        engine.dispose()
    else:
        _migrate(connection)


def _migrate(connection: Connection) -> None:
    context.configure(
        connection=connection, target_metadata=metadata, render_as_batch=True, compare_type=True
    )
    with context.begin_transaction():
        context.run_migrations()


if context.is_offline_mode():
    run_offline()
else:
    run_online()
