"""``wikivel-bot write`` and ``wikivel-bot revert``: the only commands that edit Commons.

Thin: parse options, build the store, the site and the writer (or reverter), call
``commons.writer.loop.write_approved`` / ``commons.writer.revert.revert_batch`` and print the counters.
For a dry run, pywikibot's ``simulate`` is switched on *before* the site is built, so no
write request can leave the process whatever happens after.
"""

from __future__ import annotations

import re
import time
from typing import Any, Optional, Tuple

import click

from wikivel_bot.cli.context import CliContext
from wikivel_bot.cli.poll import worker_name
from wikivel_bot.errors import UsageError


def _open_site(obj: CliContext) -> Tuple[Any, Any]:
    """(Commons site, Wikibase repository for items) from the settings."""
    from wikivel_bot.commons.site import open_repo

    site = obj.site()
    return site, open_repo(obj.settings.site, site)


def _echo(lines: Any) -> None:
    for line in lines:
        click.echo(line)


@click.command("write")
@click.option("--batch-size", type=click.IntRange(1, 1000), metavar="N",
              help="Approved pairs claimed at a time (default: write.batch_size).")
@click.option("--dry-run", is_flag=True,
              help="Simulate: pywikibot's simulate blocks every write request. The outcome is "
                   "an audit record only: pairs stay approved for a later real write, and a "
                   "pair already simulated since its approval is not simulated again. Also "
                   "write.dry_run or WIKIVEL_WRITE_DRY_RUN; any one of them makes it a dry run.")
@click.option("--follow", is_flag=True,
              help="After writing what is approved now, keep waiting for new approvals "
                   "(checked every daemon.link_interval_s seconds) until Ctrl-C.")
@click.option("--once", is_flag=True, hidden=True,
              help="Write what is approved now and exit (the default; kept for old scripts).")
@click.pass_obj
def write(obj: CliContext, batch_size: Optional[int], dry_run: bool, follow: bool,
          once: bool) -> None:
    """Write approved depicts statements to Commons, then exit (--follow keeps waiting).
    Before each edit the file and its structured data are read again: an item already
    present, a more specific item present, {{nobots}}, protection or deletion skips the pair
    with a reason, and so does an item the safety rules as configured now withhold (a pair
    approved before a rule change: "withheld by the safety rules: ..."). Edits carry the approver, the tool version and a batch id (for `revert
    --batch`) in the summary, and use pywikibot's maxlag and put_throttle. Claimed pairs are
    leased: the lease is renewed while the run works and confirmed right before each edit,
    and whatever the run did not handle is released when it exits. Prints written / skipped
    / failed counts."""
    if once and follow:
        raise UsageError("--once and --follow contradict each other: choose one")
    settings = obj.settings
    dry = dry_run or settings.write.dry_run
    from wikivel_bot.commons.writer import loop as write_loop
    from wikivel_bot.commons.writer import statement_writer as w

    if dry:
        w.enable_dry_run()  # before the site exists: nothing can be written from here on
    store = obj.store()
    from wikivel_bot.queue.leases import free_dead_local_claims

    for dead, n in free_dead_local_claims(store).items():
        click.echo(f"released {n} claims of {dead} (that process is gone)", err=True)
    if (not follow and not store.counts()["candidates"].get("approved") and not store.owed_follow_ups(limit=1)
            and not store.unsettled_summary()["count"]):
        # Nothing a human approved (no later decision to honour, no edit whose answer never
        # came to look for): no site to open, no batch id to hand out.
        click.echo("nothing approved: nothing to write, no batch created")
        return

    from wikivel_bot.commons.site import open_items
    from wikivel_bot.commons.writer.stop_page import StopGuard
    from wikivel_bot.labels import default_label_set

    site, repo = _open_site(obj)
    label_set, items = default_label_set(settings.linker.labels_dir), open_items(settings.site, repo)
    # The safety rules as configured now: a pair approved before a rule change is refused.
    writer = w.StatementWriter(site, w.new_batch_id(), w.hierarchy_lookup(label_set, items), repo=repo,
                               tags=settings.write.tags, dry_run=dry,
                               safety=w.safety_check(settings.safety, label_set, items), items=items,
                               # Never an edit later than a third of the lease after its last check.
                               fresh_s=settings.db.claim_lease_s / 3,
                               # The kill switch, read right before every edit (the daemon's too).
                               stop=StopGuard(site, settings.daemon.stop_page, settings.daemon.stop_run_text))
    counters = write_loop.WriteCounters(batch_id=writer.batch_id)
    worker = worker_name("write")
    size = batch_size or settings.write.batch_size
    if dry:
        click.echo("dry run: nothing is written; approvals stay approved", err=True)
    try:
        while True:
            write_loop.write_approved(store, writer, batch_size=size, worker=worker,
                             max_attempts=settings.write.max_attempts, counters=counters,
                             lease_renewal_s=settings.db.claim_lease_s / 3)
            if not follow:
                break
            click.echo(f"waiting for new approvals (--follow; every "
                       f"{settings.daemon.link_interval_s} s, Ctrl-C to stop)", err=True)
            time.sleep(settings.daemon.link_interval_s)
    except KeyboardInterrupt:
        click.echo("interrupted", err=True)
    finally:
        if not counters.claimed:
            counters.batch_id = ""  # a batch that wrote nothing is not one: no id to revert
        _echo(counters.lines())
        waiting = _waiting_note(store, dry)
        if waiting:
            click.echo(waiting)


def _waiting_note(store: Any, dry: bool) -> str:
    """What is still approved but was not handled, and why (retry time, another writer)."""
    from wikivel_bot.queue import monitor

    left = monitor.approved_backlog(store)
    parts = []
    if left["retry_later"]:
        parts.append(f"{left['retry_later']} waiting for a retry time (next {left['next_retry']})")
    if left["claimed_elsewhere"]:
        parts.append(f"{left['claimed_elsewhere']} claimed by another writer")
    if dry and left["simulated"]:
        parts.append(f"{left['simulated']} already simulated (a real `write` writes them)")
    return ("still approved: " + "; ".join(parts)) if parts else ""


@click.command("revert")
@click.option("--batch", "batch_id", required=True, metavar="ID",
              help="The batch id from the edit summaries (b-YYYYMMDDHHMMSS-xxxx).")
@click.option("--dry-run", is_flag=True,
              help="Simulate: show what would be removed; nothing is sent or recorded.")
@click.pass_obj
def revert(obj: CliContext, batch_id: str, dry_run: bool) -> None:
    """Remove the statements a write batch added, by their statement ids from the audit
    trail. Only statements still exactly as the bot wrote them (same id, item and rank, no
    qualifiers or references) are removed; anything changed by someone since is left alone
    with a reason. Outcomes are recorded in the audit trail under the batch id."""
    settings = obj.settings
    dry = dry_run or settings.write.dry_run
    from wikivel_bot.commons.writer import revert as r
    from wikivel_bot.commons.writer.statement_writer import enable_dry_run

    if dry:
        enable_dry_run()
    store = obj.store()
    # Until the store has these methods itself (see queue/revert_queries.py).
    from wikivel_bot.queue.revert_queries import RevertQueue

    queue = RevertQueue(store)
    _check_batch(queue, batch_id)
    simulated = r.simulated_batch(queue, batch_id)
    if simulated:  # a dry run's batch: nothing on the wiki, so no wiki to open
        _echo(r.RevertCounters(batch_id=batch_id, simulated=simulated).lines())
        return
    site, _repo = _open_site(obj)
    from wikivel_bot.commons.writer.stop_page import StopGuard

    # The kill switch holds for reverts too: read right before each removal.
    reverter = r.StatementReverter(site, tags=settings.write.tags, dry_run=dry,
                                   stop=StopGuard(site, settings.daemon.stop_page, settings.daemon.stop_run_text))
    counters = r.RevertCounters(batch_id=batch_id)
    try:
        r.revert_batch(queue, reverter, batch_id, counters=counters)
    except KeyboardInterrupt:
        click.echo("interrupted", err=True)
    finally:
        _echo(counters.lines())


# What ``write`` prints as its batch: b-YYYYMMDDHHMMSS-xxxx (``commons.writer.new_batch_id``).
BATCH_ID = re.compile(r"b-\d{14}-[0-9a-f]{4}")


def _check_batch(queue: Any, batch_id: str) -> None:
    """The batch must be in the audit trail before the wiki is opened or anything counted, so
    a wrong id (``BATCH_ID`` copied from the README) is one error line, not zero counts first.

    :raises NotFound: no such batch; the message says what a batch id looks like.
    """
    from wikivel_bot.errors import NotFound

    try:
        queue.written_statements(batch_id)
    except NotFound as exc:
        if BATCH_ID.fullmatch(batch_id):
            raise
        raise NotFound(f"{exc}: a batch id looks like b-20260101120000-1a2b, "
                       "the 'batch b-...' line `wikivel-bot write` printed (also in `audit`)") from None
