"""``wikivel-bot link``: fetch and link whatever is queued, from the command line.

The daemon runs the same two stages on a schedule; this command is for operators who run
stages by hand (or from cron) and for trying a linker on a queue.
"""

from __future__ import annotations

from typing import Optional

import click

from wikivel_bot.cli import ranges
from wikivel_bot.cli.context import CliContext
from wikivel_bot.cli.poll import _echo_lines, _repeat, worker_name


@click.command("link")
@click.option("--once", is_flag=True, help="Handle what is queued now and exit (default: keep waiting).")
@click.option("--limit", type=ranges.count(), help="Stop after N files linked or given up on.")
@click.option("--linker", "linker_name", help="Linker variant (linker.name), see `wikivel-bot linkers`.")
@click.option("--weights", help="Local weights file, or 'random' for a smoke run (linker.weights).")
@click.option("--precision", help="Encoder precision: auto, fp32, bf16, int8 (linker.precision).")
@click.pass_obj
def link(obj: CliContext, once: bool, limit: Optional[int], linker_name: Optional[str],
         weights: Optional[str], precision: Optional[str] = None) -> None:
    """Fetch queued files, then link fetched ones: download each thumbnail, run the linker,
    apply the hierarchy-aware ranking and save the candidates for review. Rejected items
    are never proposed again. Corrupt thumbnails get a reason; the batch goes on."""
    if linker_name:
        obj.overrides[("linker", "name")] = linker_name
    if weights:
        obj.overrides[("linker", "weights")] = weights
    if precision:
        obj.overrides[("linker", "precision")] = precision
    settings = obj.settings
    store = obj.store()

    from wikivel_bot import pipeline
    from wikivel_bot.commons.fetcher import Fetcher
    from wikivel_bot.commons.thumbnails import ThumbnailClient

    site = obj.site()
    fetcher = Fetcher.from_settings(site, settings)
    thumbnails = ThumbnailClient.from_settings(settings.fetch, settings.site.operator_contact)
    # As the daemon builds it: item images, cascade, verifier, rules, evidence cached in the queue.
    ready = obj.ready_linker(evidence_cache=store)
    linker = ready.linker
    fetched, linked = pipeline.FetchCounters(), pipeline.LinkCounters()
    worker = worker_name("link")
    size = max(1, settings.linker.batch_size)

    def run_linker(files, rejected):
        return ready.link(files, rejected)

    def round_() -> None:
        while limit is None or linked.claimed < limit:
            got = pipeline.fetch_pending(store, fetcher, fetcher.batch_size, worker)
            fetched.add(got)
            step = size if limit is None else min(size, limit - linked.claimed)
            done = pipeline.link_pending(store, thumbnails, run_linker, step, worker)
            linked.add(done)
            if got.claimed == 0 and done.claimed == 0:
                return

    try:
        _repeat(round_, once, settings.daemon.link_interval_s, "linking",
                finished=lambda: limit is not None and linked.claimed >= limit)
    except KeyboardInterrupt:
        click.echo("interrupted", err=True)
    finally:
        thumbnails.close()
        if fetcher.thumbnails is not None:
            fetcher.thumbnails.close()
        click.echo("fetch:")
        _echo_lines(["  " + line for line in fetched.lines()])
        description = linker.description
        notes = "; ".join(description.warnings)
        if description.precision:
            notes = "; ".join(n for n in (f"{description.precision}: {description.precision_reason}", notes) if n)
        click.echo(f"link ({description.name}{', ' + notes if notes else ''}):")
        _echo_lines(["  " + line for line in linked.lines()])
