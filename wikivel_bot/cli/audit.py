"""``wikivel-bot audit``: who approved what, and what the writer made of it."""

from __future__ import annotations

import json
from typing import Optional

import click

from wikivel_bot.cli import ranges
from wikivel_bot.cli.context import CliContext


@click.command("audit")
@click.option("--batch", "batch_id", help="Only pairs written (or tried) in this batch, with their approvals.")
@click.option("--file", "file_ref", help="Only this file: M-id (M123) or title (File:Name.jpg).")
@click.option("--reviewer", help="Only this reviewer's decisions and the writes of pairs they approved.")
@click.option("--limit", type=ranges.count(), help="Only the newest N events.")
@click.option("--json", "as_json", is_flag=True, help="One JSON document: a list of events.")
@click.pass_obj
def audit(
    obj: CliContext, batch_id: Optional[str], file_ref: Optional[str], reviewer: Optional[str],
    limit: Optional[int], as_json: bool,
) -> None:
    """List decisions (who approved, rejected or skipped which item, when, from where) and
    write attempts (batch, outcome, revision id, statement id or error), oldest first."""
    from wikivel_bot.queue.reviews import audit_events
    from wikivel_bot.review.actions import resolve_page_id
    from wikivel_bot.review.audit import audit_lines, audit_record

    store = obj.store()
    page_id = resolve_page_id(store, file_ref) if file_ref else None
    events = audit_events(store, batch_id=batch_id, page_id=page_id, reviewer=reviewer, limit=limit)
    label_of = obj.item_labels({e.qid for e in events})
    if as_json:
        click.echo(json.dumps([audit_record(e, label_of) for e in events], indent=2, ensure_ascii=False))
        return
    for line in audit_lines(events, label_of):
        click.echo(line)
