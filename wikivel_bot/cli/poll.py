"""``wikivel-bot poll`` and ``wikivel-bot fetch``: the first two stages from the command line.

Thin: parse options, build the site, poller/fetcher and store, call ``wikivel_bot.pipeline``
and print its counters. pywikibot is loaded (through ``wikivel_bot.commons``) only when a
command runs.
"""

from __future__ import annotations

import os
import socket
import time
from datetime import datetime, timezone
from typing import Any, Callable, List, Optional

import click

from wikivel_bot.cli import ranges
from wikivel_bot.cli.context import CliContext
from wikivel_bot.errors import UsageError, WikiError


def parse_since(text: Optional[str]) -> Optional[datetime]:
    """``--since``: ISO 8601 (``2024-05-01``, ``2024-05-01T08:00:00Z``) or MediaWiki's
    ``20240501080000``, as aware UTC; naive times are UTC."""
    if text is None:
        return None
    raw = text.strip()
    try:
        if raw.isdigit() and len(raw) == 14:
            value = datetime.strptime(raw, "%Y%m%d%H%M%S")
        else:
            value = datetime.fromisoformat(raw.replace("Z", "+00:00"))
    except ValueError:
        raise UsageError(
            f"--since {text!r} is not a timestamp (use 2024-05-01, 2024-05-01T08:00:00Z or 20240501080000)"
        ) from None
    return value.replace(tzinfo=timezone.utc) if value.tzinfo is None else value.astimezone(timezone.utc)


def worker_name(stage: str) -> str:
    """``fetch:host:pid``: who holds a claim, readable in the queue."""
    return f"{stage}:{socket.gethostname()}:{os.getpid()}"


def _echo_lines(lines: List[str]) -> None:
    for line in lines:
        click.echo(line)


def _repeat(round_: Callable[[], Any], once: bool, interval_s: float, what: str,
            finished: Callable[[], bool] = lambda: False) -> None:
    """Run ``round_`` once, or every ``interval_s`` seconds until ``finished()`` or Ctrl-C.

    Without ``--once`` a failing wiki does not end the loop: the error is printed and the
    next round tries again (the queue keeps every committed step).
    """
    while True:
        try:
            round_()
        except WikiError as exc:
            if once:
                raise
            click.echo(f"warning: {what} failed, trying again in {interval_s:g} s: " + " ".join(str(exc).split()), err=True)
        if once or finished():
            return
        time.sleep(interval_s)


@click.command("poll")
@click.option("--once", is_flag=True, help="Poll once and exit (default: every poll.interval_s until Ctrl-C).")
@click.option("--since", metavar="TIMESTAMP",
              help="Start at this time instead of the stored cursor (2024-05-01T08:00:00Z).")
@click.pass_obj
def poll(obj: CliContext, once: bool, since: Optional[str]) -> None:
    """Queue new uploads from the wiki's upload log. Reads from the cursor stored in the
    queue (a new queue starts with the newest poll.batch_size uploads), applies the
    poll.* rules (MIME types, size, depicts, opt-outs) and records a reason for every file
    it refuses. Prints what it read, queued and refused."""
    start = parse_since(since)
    settings = obj.settings
    store = obj.store()

    from wikivel_bot import pipeline
    from wikivel_bot.commons.poller import UploadPoller
    from wikivel_bot.commons.site import open_site

    site = open_site(settings.site)
    poller = UploadPoller(site, settings.poll)
    total = pipeline.PollCounters()

    def round_() -> None:
        nonlocal start
        total.add(pipeline.poll_once(store, poller, since=start))
        start = None  # --since applies to the first round only; the cursor moves on

    try:
        _repeat(round_, once, settings.poll.interval_s, "polling")
    except KeyboardInterrupt:
        click.echo("interrupted", err=True)
    finally:
        _echo_lines(total.lines())


@click.command("fetch")
@click.option("--once", is_flag=True, help="Fetch what is queued now and exit (default: keep waiting for more).")
@click.option("--limit", type=ranges.count(), help="Stop after N files.")
@click.pass_obj
def fetch(obj: CliContext, once: bool, limit: Optional[int]) -> None:
    """Fetch queued (discovered) files: thumbnail, description, categories, existing
    depicts, protection and {{nobots}}. Each file becomes fetched, unavailable or
    ineligible with a reason. Without --once, waits daemon.link_interval_s for new files."""
    settings = obj.settings
    store = obj.store()

    from wikivel_bot import pipeline
    from wikivel_bot.commons.fetcher import Fetcher
    from wikivel_bot.commons.site import open_site

    site = open_site(settings.site)
    fetcher = Fetcher.from_settings(site, settings)
    worker = worker_name("fetch")
    total = pipeline.FetchCounters()

    def round_() -> None:
        # Rounds of one API batch each until the queue has no discovered file left.
        while limit is None or total.claimed < limit:
            size = fetcher.batch_size if limit is None else min(fetcher.batch_size, limit - total.claimed)
            done = pipeline.fetch_pending(store, fetcher, size, worker)
            total.add(done)
            if done.claimed == 0:
                return

    try:
        _repeat(round_, once, settings.daemon.link_interval_s, "fetching",
                finished=lambda: limit is not None and total.claimed >= limit)
    except KeyboardInterrupt:
        click.echo("interrupted", err=True)
    finally:
        if fetcher.thumbnails is not None:
            fetcher.thumbnails.close()
        _echo_lines(total.lines())
