"""``wikivel-bot status`` and ``wikivel-bot config``: what the bot is doing and with what."""

from __future__ import annotations

import json

import click

from wikivel_bot.cli.context import CliContext


@click.command()
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@click.pass_obj
def status(obj: CliContext, as_json: bool) -> None:
    """Show the queue: files and candidates by state, the poll cursors, the daemon (running?
    writing paused and why?), throughput of the last hour, the lag behind uploads and recent
    errors."""
    from wikivel_bot.queue import monitor
    from wikivel_bot.queue.engine import redacted_url

    store = obj.store()
    counts = store.counts()
    cursors = store.all_cursors()
    daemon = monitor.get_states(store)
    activity = monitor.activity(store)
    problems = monitor.recent_file_problems(store, limit=5)
    if as_json:
        doc = {
            "database": redacted_url(store.engine),
            "settings": obj.settings.source,
            **counts,
            "cursors": {
                s: {"timestamp": c.timestamp.isoformat(), "log_id": c.log_id} for s, c in cursors.items()
            },
            "daemon": daemon,
            "last_hour": activity,
            "recent_file_problems": problems,
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
    _print_daemon(daemon)
    edits = ", ".join(f"{n} {outcome}" for outcome, n in sorted(activity["edits"].items())) or "none"
    click.echo(f"last hour: {activity['files_linked']} files linked, "
               f"{activity['files_unavailable']} unavailable; edits: {edits}")
    waiting = activity["waiting"]
    if waiting:
        click.echo(f"lag: {waiting} files waiting to be linked, the oldest uploaded {activity['oldest_waiting']}")
    else:
        click.echo("lag: nothing waiting to be linked")
    for problem in problems:
        click.echo(f"  unavailable {problem['file']} {problem['title']}: {problem['reason']}")


def _print_daemon(daemon: dict) -> None:
    workers = [v for k, v in sorted(daemon.items()) if k.startswith("worker:")]
    if not workers:
        click.echo("daemon: never started on this queue")
    for info in workers:
        state = "running" if info.get("running") else f"stopped {info.get('stopped_at', '')}"
        click.echo(f"daemon {info.get('worker', '?')}: {state} (started {info.get('started_at')}, "
                   f"last heartbeat {info.get('heartbeat', 'none')})")
        click.echo(f"  linker {info.get('linker')} {info.get('linker_version', '')}, "
                   f"dry run: {info.get('dry_run')}, writing: {info.get('writing')}")
        if info.get("precision"):
            click.echo(f"  precision {info['precision']} ({info.get('precision_reason', '')})")
        for warning in info.get("warnings", []):
            click.echo(f"  note: {warning}")
    writing = daemon.get("writing")
    if writing and writing.get("paused"):
        click.echo(f"writing PAUSED since {writing.get('at')}: {writing.get('reason')}")
    poll = daemon.get("poll")
    if poll:
        click.echo(f"last poll {poll.get('at')}: {poll.get('read')} read, {poll.get('enqueued')} enqueued")
    for error in daemon.get("errors", {}).get("items", [])[-5:]:
        click.echo(f"error {error['at']} {error['stage']}: {error['message']}")


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
