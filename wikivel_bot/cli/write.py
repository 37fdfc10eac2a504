"""``wikivel-bot write`` and ``wikivel-bot revert``: the only commands that edit Commons.

Thin: parse options, build the store, the site and the writer (or reverter), call
``commons.writer.write_approved`` / ``commons.revert.revert_batch`` and print the counters.
For a dry run, pywikibot's ``simulate`` is switched on *before* the site is built, so no
write request can leave the process whatever happens after.
"""

from __future__ import annotations

import time
from typing import Any, Optional, Tuple

import click

from wikivel_bot.cli.context import CliContext
from wikivel_bot.cli.poll import worker_name


def _open_site(obj: CliContext) -> Tuple[Any, Any]:
    """(Commons site, Wikibase repository for items) from the settings."""
    from wikivel_bot.commons.site import open_repo

    site = obj.site()
    return site, open_repo(obj.settings.site, site)


def _echo(lines: Any) -> None:
    for line in lines:
        click.echo(line)


@click.command("write")
@click.option("--batch-size", type=click.IntRange(min=1), metavar="N",
              help="Approved pairs claimed at a time (default: write.batch_size).")
@click.option("--dry-run", is_flag=True,
              help="Simulate: pywikibot's simulate blocks every write request; outcomes are "
                   "recorded as dry_run (also write.dry_run).")
@click.option("--once", is_flag=True,
              help="Write what is approved now and exit (default: keep waiting for approvals).")
@click.pass_obj
def write(obj: CliContext, batch_size: Optional[int], dry_run: bool, once: bool) -> None:
    """Write approved depicts statements to Commons. Before each edit the file and its
    structured data are read again: an item already present, a more specific item present,
    {{nobots}}, protection or deletion skips the pair with a reason. Edits carry the
    approver, the tool version and a batch id (for `revert --batch`) in the summary, and
    use pywikibot's maxlag and put_throttle. Prints written / skipped / failed counts."""
    settings = obj.settings
    dry = dry_run or settings.write.dry_run
    from wikivel_bot.commons import writer as w

    if dry:
        w.enable_dry_run()  # before the site exists: nothing can be written from here on
    store = obj.store()

    from wikivel_bot.commons.items import ItemClient
    from wikivel_bot.labels import default_label_set

    site, repo = _open_site(obj)
    lookup = w.hierarchy_lookup(default_label_set(settings.linker.labels_dir),
                                ItemClient(repo, settings.site.languages))
    writer = w.StatementWriter(site, w.new_batch_id(), lookup, repo=repo,
                               tags=settings.write.tags, dry_run=dry)
    counters = w.WriteCounters(batch_id=writer.batch_id)
    worker = worker_name("write")
    size = batch_size or settings.write.batch_size
    try:
        while True:
            w.write_approved(store, writer, batch_size=size, worker=worker,
                             max_attempts=settings.write.max_attempts, counters=counters)
            if once:
                break
            time.sleep(settings.daemon.link_interval_s)
    except KeyboardInterrupt:
        click.echo("interrupted", err=True)
    finally:
        _echo(counters.lines())


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
    from wikivel_bot.commons import revert as r
    from wikivel_bot.commons.writer import enable_dry_run

    if dry:
        enable_dry_run()
    store = obj.store()
    # Until the store has these methods itself (see queue/revert_queries.py).
    from wikivel_bot.queue.revert_queries import RevertQueue

    queue = RevertQueue(store)
    site, _repo = _open_site(obj)
    reverter = r.StatementReverter(site, tags=settings.write.tags, dry_run=dry)
    counters = r.RevertCounters(batch_id=batch_id)
    try:
        r.revert_batch(queue, reverter, batch_id, counters=counters)
    except KeyboardInterrupt:
        click.echo("interrupted", err=True)
    finally:
        _echo(counters.lines())
