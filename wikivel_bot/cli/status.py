"""``wikivel-bot status`` and ``wikivel-bot config``: what the bot is doing and with what."""

from __future__ import annotations

import json

import click

from wikivel_bot.cli.context import CliContext


@click.command()
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@click.pass_obj
def status(obj: CliContext, as_json: bool) -> None:
    """Show the queue: files and candidates by state, and the poll cursors."""
    from wikivel_bot.queue.engine import redacted_url

    store = obj.store()
    counts = store.counts()
    cursors = store.all_cursors()
    if as_json:
        doc = {
            "database": redacted_url(store.engine),
            "settings": obj.settings.source,
            **counts,
            "cursors": {
                s: {"timestamp": c.timestamp.isoformat(), "log_id": c.log_id} for s, c in cursors.items()
            },
        }
        click.echo(json.dumps(doc, indent=2, sort_keys=True))
        return
    click.echo(f"database: {redacted_url(store.engine)}")
    click.echo(f"settings: {obj.settings.source}")
    for name in ("files", "candidates"):
        click.echo(f"{name}:")
        for state, n in counts[name].items():
            click.echo(f"  {state:<14}{n:>10}")
    click.echo("poll cursors:")
    if not cursors:
        click.echo("  (none yet: nothing polled)")
    for source, cursor in cursors.items():
        click.echo(f"  {source}: {cursor.timestamp.isoformat()}Z log id {cursor.log_id}")


@click.group("config")
def config_command() -> None:
    """Inspect the settings (file, WIKIVEL_* variables and defaults merged)."""


@config_command.command("show")
@click.pass_obj
def config_show(obj: CliContext) -> None:
    """Print the effective settings as TOML (a starting point for wikivel.toml)."""
    from wikivel_bot.config import settings_as_toml

    click.echo(f"# from: {obj.settings.source}")
    click.echo(settings_as_toml(obj.settings))
