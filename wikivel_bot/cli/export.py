"""``wikivel-bot export`` and ``wikivel-bot import-decisions``: review away from the terminal.

Export writes the suggestions as CSV, JSON Lines, QuickStatements or a wikitext page; a
patroller fills the CSV's ``decision`` column and ``import-decisions`` applies it.
"""

from __future__ import annotations

import os
import sys
from contextlib import contextmanager
from datetime import datetime, timezone
from functools import partial
from pathlib import Path
from typing import Any, Iterator, Optional, TextIO, Tuple

import click

from wikivel_bot.cli import ranges
from wikivel_bot.cli.context import CliContext
from wikivel_bot.cli.liveeval import calibrated_option
from wikivel_bot.cli.review import build_filter, filter_options
from wikivel_bot.core.review_rules import EXPORT_FORMATS
from wikivel_bot.errors import UsageError
from wikivel_bot.types import CandidateState

_STATES = tuple(s.value for s in CandidateState) + ("all",)


@click.command("export")
@click.option("--format", "fmt", type=click.Choice(EXPORT_FORMATS), default="csv", show_default=True,
              help="csv and jsonl: every field a patroller needs (csv has an empty decision column); "
                   "quickstatements: M123|P180|Q146 lines of approved pairs; wikitext: a table for a "
                   "review page on the wiki.")
@click.option("--state", "states", multiple=True, type=click.Choice(_STATES),
              help="Pair states to export; repeat for several. Default: proposed (approved for "
                   "quickstatements). 'all' is every state but rejected: rejected pairs are exported "
                   "only when asked for by name.")
@filter_options
@calibrated_option
@click.option("--limit", type=ranges.count(), help="At most this many files.")
@click.option("--out", "out_path", default="-", show_default=True, type=click.Path(dir_okay=False, allow_dash=True),
              help="Output file; - is standard output.")
@click.pass_obj
def export(
    obj: CliContext, fmt: str, states: Tuple[str, ...], limit: Optional[int], out_path: str,
    calibrated: Optional[str] = None, **filters: Any
) -> None:
    """Export suggestions for review elsewhere: a spreadsheet, a script, QuickStatements, or
    a wiki page for community review. Files come oldest first."""
    from itertools import islice

    from wikivel_bot.core.review_rules import file_page_url
    from wikivel_bot.queue.reviews import iter_review_files
    from wikivel_bot.review import export_states, write_export

    chosen = export_states(fmt, states)
    flt = build_filter(obj, chosen, **filters)
    files = iter_review_files(obj.store(), flt)
    calibration = None
    calibrated = calibrated or obj.settings.linker.calibrated or None
    if calibrated:
        from wikivel_bot.liveeval.apply import filter_review_files
        from wikivel_bot.liveeval.thresholds import filter_for

        calibration = filter_for(calibrated, obj.label_set)
        files = filter_review_files(files, calibration)
    if limit is not None:
        files = islice(files, limit)
    page_url = partial(file_page_url, api_url=obj.settings.site.api_url, site_name=obj.settings.site.name)
    heading = "state " + ", ".join(s.value for s in chosen)
    with _output(out_path) as out:
        stats = write_export(files, fmt, out, page_url, datetime.now(timezone.utc), heading=heading,
                             label_of=obj.item_labels() if fmt == "wikitext" else None)
    where = "standard output" if out_path == "-" else out_path
    click.echo(f"exported {stats.pairs} pair{'s' if stats.pairs != 1 else ''} of {stats.files} "
               f"file{'s' if stats.files != 1 else ''} ({heading}) to {where}", err=True)
    if calibration is not None:
        click.echo(calibration.summary(), err=True)
    if stats.withheld:
        click.echo(stats.withheld_line(), err=True)
    if stats.ranks_lost:
        click.echo(f"note: {stats.ranks_lost} prominent approval(s) exported without preferred rank: "
                   "QuickStatements cannot set ranks; set them on Commons or let the bot write them",
                   err=True)


@click.command("import-decisions")
@click.argument("csv_path", metavar="FILE.csv", type=click.Path(dir_okay=False, allow_dash=True, path_type=Path))
@click.option("--reviewer", help="Your Commons user name, recorded with each decision (review.reviewer).")
@click.pass_obj
def import_decisions(obj: CliContext, csv_path: Path, reviewer: Optional[str]) -> None:
    """Apply the decisions typed into an exported CSV's decision column (approve, prominent,
    reject, skip; empty = none). Lists every row that could not be applied with its line
    number and reason; decisions already in the queue are left alone, so importing a file
    twice changes nothing. A cell may hold up to 8 MiB of text (export writes descriptions
    whole); a row with a longer one is refused and the rest of the file is not read. Exits 1
    when some rows were refused (the others are applied), 2 when the file cannot be used."""
    from wikivel_bot.review import import_decisions as apply_file
    from wikivel_bot.review import import_decisions_file, resolve_reviewer

    name = resolve_reviewer(reviewer, obj.settings.review.reviewer)
    store = obj.store()
    if str(csv_path) == "-":
        report = apply_file(store, sys.stdin, name)
    else:
        report = import_decisions_file(store, csv_path, name)
    for note in report.refused:
        click.echo(f"line {note.line}: {note.reason}")
    if obj.verbose:
        for note in report.unchanged:
            click.echo(f"line {note.line}: unchanged: {note.reason}")
    click.echo(report.summary())
    if not report.ok:
        click.get_current_context().exit(1)


@contextmanager
def _output(path: str) -> Iterator[TextIO]:
    """Standard output, or a file that appears only once it is complete (written beside it,
    then renamed), so a failed export never leaves half a file behind for someone to post."""
    if path == "-":
        yield sys.stdout
        return
    target = Path(path)
    partial_path = target.with_name(target.name + ".part")
    try:
        handle = open(partial_path, "w", encoding="utf-8", newline="")
    except OSError as exc:
        raise UsageError(f"cannot write {target}: {exc.strerror}") from None
    try:
        with handle:
            yield handle
        os.replace(partial_path, target)
    finally:
        if partial_path.exists():
            partial_path.unlink()
