"""``wikivel-bot db``: create and migrate the queue database."""

from __future__ import annotations

import click

from wikivel_bot.cli.context import CliContext


@click.group()
def db() -> None:
    """Create, migrate and inspect the queue database (db.url / WIKIVEL_DB_URL)."""


@db.command()
@click.argument("revision", default="head")
@click.pass_obj
def upgrade(obj: CliContext, revision: str) -> None:
    """Migrate the queue database up to REVISION (default: the newest). Creates the SQLite
    file when it does not exist; safe to run again."""
    from wikivel_bot.queue import migrate
    from wikivel_bot.queue.engine import redacted_url

    store = obj.store(check_schema=False)
    before = migrate.current_revision(store.engine)
    migrate.upgrade(store.engine, revision)
    after = migrate.current_revision(store.engine)
    where = redacted_url(store.engine)
    if before == after:
        click.echo(f"{where}: already at {after}")
    else:
        click.echo(f"{where}: upgraded {before or 'empty'} -> {after}")


@db.command()
@click.argument("revision")
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
@click.pass_obj
def downgrade(obj: CliContext, revision: str, yes: bool) -> None:
    """Migrate the queue database down to REVISION ("base" drops every table: all queued
    files, decisions and the audit trail are lost)."""
    from wikivel_bot.queue import migrate

    store = obj.store(check_schema=False)
    if not yes:
        click.confirm(f"Downgrade the queue database to {revision}? Data may be lost", abort=True)
    migrate.downgrade(store.engine, revision)
    click.echo(f"now at {migrate.current_revision(store.engine) or 'empty'}")


@db.command()
@click.pass_obj
def current(obj: CliContext) -> None:
    """Print the database's migration revision and the newest one available."""
    from wikivel_bot.queue import migrate
    from wikivel_bot.queue.engine import redacted_url

    store = obj.store(check_schema=False)
    now, head = migrate.current_revision(store.engine), migrate.head_revision()
    note = "up to date" if now == head else "run `wikivel-bot db upgrade`"
    click.echo(f"{redacted_url(store.engine)}: {now or 'empty'} (head {head}; {note})")
