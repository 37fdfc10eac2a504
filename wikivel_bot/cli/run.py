"""``wikivel-bot run``: start the daemon (see wikivel_bot/daemon/scheduler.py)."""

from __future__ import annotations

import click

from wikivel_bot.cli.context import CliContext


@click.command("run")
@click.option("--dry-run", is_flag=True,
              help="Run every stage with the writer in simulate mode: nothing is written to the "
                   "wiki, outcomes are recorded as dry_run (also write.dry_run).")
@click.option("--linker", "linker_name", help="Linker variant (linker.name).")
@click.option("--weights", help="Local weights file, or 'random' for a smoke run (linker.weights).")
@click.pass_obj
def run(obj: CliContext, dry_run: bool, linker_name: str, weights: str) -> None:
    """Run the bot: poll the upload log, fetch and link new files, and write approved
    statements (only with write.enabled, or simulated with --dry-run), on a schedule, until
    SIGTERM or Ctrl-C: it stops within 10 s (an edit whose answer is late is recorded at the
    next start); a second signal exits at once. Before each write batch the stop page
    (daemon.stop_page) is read: anything but daemon.stop_run_text pauses writing. One log line
    per event on stderr; `wikivel-bot status` shows progress from another terminal."""
    if linker_name:
        obj.overrides[("linker", "name")] = linker_name
    if weights:
        obj.overrides[("linker", "weights")] = weights
    settings = obj.settings
    dry = dry_run or settings.write.dry_run
    store = obj.store()

    from wikivel_bot.daemon.scheduler import Daemon, build_parts
    from wikivel_bot.events import configure_logging

    configure_logging(obj.verbose)
    parts = build_parts(settings, store, dry_run=dry)
    Daemon(settings, parts, write_interval_s=settings.daemon.link_interval_s).run()
