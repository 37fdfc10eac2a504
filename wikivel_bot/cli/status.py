"""``wikivel-bot status`` and ``wikivel-bot config``: what the bot is doing and with what."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from typing import Any, Dict, List, Optional

import click

from wikivel_bot.cli.context import CliContext
from wikivel_bot.cli.safety_view import notice_lines, safety_doc
from wikivel_bot.core.timestamps import parse_timestamp

# The daemon saves a heartbeat every few seconds (``heartbeat_s`` in its state document); one
# older than this many intervals (and at least NOT_RESPONDING_MIN_S) means it stopped without
# saying so (kill -9, OOM, a frozen machine).
NOT_RESPONDING_INTERVALS = 6
NOT_RESPONDING_MIN_S = 60.0


@click.command()
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@click.pass_obj
def status(obj: CliContext, as_json: bool) -> None:
    """Show the queue: files and candidates by state, follow-up edits owed, the poll cursors,
    the daemon (running? writing paused and why?), throughput of the last hour, the lag behind
    uploads and recent errors."""
    from wikivel_bot.queue import monitor
    from wikivel_bot.queue.engine import redacted_url

    store = obj.store()
    counts = store.counts()
    cursors = store.all_cursors()
    daemon = monitor.get_states(store)
    activity = monitor.activity(store)
    problems = monitor.recent_file_problems(store, limit=5)
    backlog = monitor.approved_backlog(store)
    follow_ups = monitor.owed_follow_ups(store)
    unsettled = store.unsettled_summary()
    claims = [{**c, "expires_at": c["expires_at"].isoformat() + "Z"} for c in store.claims()]
    now = datetime.now(timezone.utc)
    for key, info in daemon.items():
        if key.startswith("worker:"):
            info["condition"] = daemon_condition(info, now)
    if as_json:
        doc = {
            "database": redacted_url(store.engine),
            "settings": obj.settings.source,
            **counts,
            "approved_backlog": backlog,
            "follow_ups": follow_ups,
            "unsettled_edits": {"count": unsettled["count"],
                                "oldest": _iso(unsettled["oldest"])},
            "claims": claims,
            "cursors": {
                s: {"timestamp": c.timestamp.isoformat(), "log_id": c.log_id} for s, c in cursors.items()
            },
            "daemon": daemon,
            "last_hour": activity,
            "recent_file_problems": problems,
            "safety": safety_doc(obj.settings.safety),
            "review_order": obj.settings.review.order,
        }
        click.echo(json.dumps(doc, indent=2, sort_keys=True))
        return
    click.echo(f"database: {redacted_url(store.engine)}")
    click.echo(f"settings: {obj.settings.source}")
    _print_safety(obj)
    from wikivel_bot.cli.learning import learning_status_lines

    for line in learning_status_lines(obj.settings):  # review order, the running model (docs/learning.md)
        click.echo(line)
    for name in ("files", "candidates"):
        click.echo(f"{name}:")
        for state, n in counts[name].items():
            click.echo(f"  {state:<14}{n:>10}{_note(name, state, backlog)}")
    click.echo(f"follow-ups owed: {_follow_ups_text(follow_ups)}")
    click.echo(f"edits without an answer: {_unsettled_text(unsettled)}")
    _print_claims(claims)
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


def _print_safety(obj: CliContext) -> None:
    # The safety rules of these settings; a switched-off rule is a WARNING line.
    from wikivel_bot.core.safety import describe_rules, rules_from

    click.echo(f"safety: {describe_rules(rules_from(obj.settings.safety))}")
    for line in notice_lines(obj.settings.safety):
        click.echo(line)


def _print_daemon(daemon: dict) -> None:
    workers = [v for k, v in sorted(daemon.items()) if k.startswith("worker:")]
    if not workers:
        click.echo("daemon: never started on this queue")
    for info in workers:
        state = info.get("condition") or daemon_condition(info, datetime.now(timezone.utc))
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


def daemon_condition(info: Dict[str, Any], now: datetime) -> str:
    """"running", "stopped <when>", "not running (process gone)" or "NOT RESPONDING since
    <last heartbeat>" for one daemon."""
    if not info.get("running"):
        return f"stopped {info.get('stopped_at', '')}".strip()
    from wikivel_bot.queue.leases import dead_local_workers

    # A daemon of this host whose process is gone (kill -9, OOM) is known dead at once; only
    # one on another host has to be judged by its heartbeat's age.
    if dead_local_workers([str(info.get("worker") or "")]):
        return f"not running (process gone; last heartbeat {info.get('heartbeat', 'never')})"
    beat = _parse_time(info.get("heartbeat"))
    interval = float(info.get("heartbeat_s") or 5)
    limit = max(NOT_RESPONDING_MIN_S, NOT_RESPONDING_INTERVALS * interval)
    if beat is None or (now - beat).total_seconds() > limit:
        return (f"NOT RESPONDING (last heartbeat {info.get('heartbeat', 'never')}; "
                "killed or frozen? its claims come back when their lease ends)")
    return "running"


def _parse_time(text: Any) -> Optional[datetime]:
    if not isinstance(text, str):
        return None
    try:
        return parse_timestamp(text)
    except ValueError:
        return None


def _note(table: str, state: str, backlog: Dict[str, Any]) -> str:
    """Why approved pairs are still approved, beside their count."""
    if table != "candidates" or state != "approved":
        return ""
    parts = []
    if backlog["simulated"]:
        parts.append(f"{backlog['simulated']} simulated by a dry run, waiting for a real write")
    if backlog["retry_later"]:
        parts.append(f"{backlog['retry_later']} waiting to retry (next {backlog['next_retry']})")
    if backlog["claimed_elsewhere"]:
        parts.append(f"{backlog['claimed_elsewhere']} claimed by a writer")
    return f"  ({'; '.join(parts)})" if parts else ""


def _iso(moment: Any) -> Any:
    return moment.isoformat() + "Z" if moment is not None else None


def _unsettled_text(unsettled: Dict[str, Any]) -> str:
    """Requests whose answer never came (``commons.writer.unsettled``)."""
    if not unsettled["count"]:
        return "none"
    return (f"{unsettled['count']} (oldest sent {_iso(unsettled['oldest'])}; each write run "
            "re-reads the file until it shows up, then records it and follows the last "
            "decision, or settles it as not applied an hour after it was sent)")


def _follow_ups_text(follow_ups: Dict[str, int]) -> str:
    """"none", or the count and what they are (the writer makes them before new writes)."""
    if not follow_ups["owed"]:
        return "none"
    parts = [f"{follow_ups['remove']} to remove"] if follow_ups["remove"] else []
    if follow_ups["rank"]:
        parts.append(f"{follow_ups['rank']} rank to change")
    return f"{follow_ups['owed']} ({', '.join(parts)}; the writer makes them on its next run)"


def _print_claims(claims: List[Dict[str, Any]]) -> None:
    if not claims:
        click.echo("claims: none held")
        return
    click.echo("claims:")
    for c in claims:
        click.echo(f"  {c['count']} {c['table']} ({c['state']}) held by {c['worker']} "
                   f"until {c['expires_at']} unless renewed")


@click.group("config")
def config_command() -> None:
    """Inspect the settings (file, WIKIVEL_* variables and defaults merged)."""


@config_command.command("show")
@click.pass_obj
def config_show(obj: CliContext) -> None:
    """Print the effective settings as TOML (a starting point for wikivel.toml)."""
    from wikivel_bot.config import settings_as_toml, settings_sources

    # Every source that set a key; each such key names its own in a comment.
    click.echo(f"# from: {settings_sources(obj.settings)}")
    click.echo(settings_as_toml(obj.settings))
    from wikivel_bot.config.paths import state_path_lines

    click.echo("\n".join(state_path_lines(obj.settings)))
    models_dir = obj.settings.learning.models_dir
    if models_dir:  # settings are read without the models; what runs is the registry's to say
        from wikivel_bot.learning import registry

        problem = registry.running_model_problem(models_dir)
        running = None if problem else registry.running_checkpoint(models_dir)
        click.echo("# learning.models_dir: " + (f"PROBLEM: {problem}" if problem else
                   f"runs {running} (in place of linker.checkpoint wherever a linker is built)" if running
                   else "nothing promoted: linker.checkpoint runs"))
