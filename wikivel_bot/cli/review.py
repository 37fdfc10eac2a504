"""``wikivel-bot review``: the terminal review, and single decisions for scripts.

``review`` alone starts a keyboard session (see docs/reviewer.md); ``review approve|
approve-prominent|reject|skip --file M123 --item Q146`` records one decision and exits.
The filter options are shared with ``export`` (:func:`filter_options`, :func:`build_filter`).
"""

from __future__ import annotations

import sys
from typing import Any, Callable, Dict, Optional, Tuple

import click

from wikivel_bot.cli import ranges
from wikivel_bot.cli.context import CliContext
from wikivel_bot.cli.liveeval import review_calibrated_option
from wikivel_bot.core.review_rules import ReviewFilter, parse_time_bound
from wikivel_bot.types import CandidateState, DecisionAction


def filter_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """The options that choose files and candidates (review and export)."""
    options = [
        click.option("--min-score", type=ranges.FINITE_FLOAT,
                     help="Leave out candidates scoring below this (default: linker.min_score)."),
        click.option("--category", help="Only files in this category (exact name, no subcategories)."),
        click.option("--uploader", help="Only files uploaded by this user."),
        click.option("--linker", "linker_name", help="Only candidates proposed by this linker (e.g. zero-shot)."),
        click.option("--since", metavar="DATE",
                     help="Only files uploaded on or after DATE (YYYY-MM-DD or ISO time, UTC)."),
        click.option("--until", metavar="DATE",
                     help="Only files uploaded up to DATE (a date includes that whole day)."),
    ]
    for option in reversed(options):
        command = option(command)
    return command


def build_filter(
    obj: CliContext,
    states: Tuple[CandidateState, ...],
    min_score: Optional[float],
    category: Optional[str],
    uploader: Optional[str],
    linker_name: Optional[str],
    since: Optional[str],
    until: Optional[str],
) -> ReviewFilter:
    """A ReviewFilter from the :func:`filter_options` values; the score threshold defaults
    to ``linker.min_score`` and the safety rules are the current ones, so nothing the linker
    would no longer propose is shown."""
    return ReviewFilter(
        states=states,
        min_score=obj.settings.linker.min_score if min_score is None else min_score,
        category=category or "",
        uploader=uploader or "",
        linker=linker_name or "",
        since=parse_time_bound(since) if since else None,
        until=parse_time_bound(until, end=True) if until else None,
        safety=obj.safety_check(),
    )


@click.group("review", invoke_without_command=True)
@filter_options
@review_calibrated_option
@click.option("--reviewer", help="Your Commons user name, recorded with each decision (review.reviewer).")
@click.pass_context
def review(ctx: click.Context, reviewer: Optional[str], calibrated: Optional[str] = None, **filters: Any) -> None:
    """Review suggestions one file at a time with single keys: 1 approve, 2 approve as
    prominent, 3 reject (remembered for the file), s skip, n skip the rest of the file,
    u undo, up/down or g N select a candidate, o open the file page, q quit. Prints a
    summary at the end. With a subcommand, records one decision without the terminal."""
    if ctx.invoked_subcommand is not None:
        ctx.meta["wikivel.reviewer"] = reviewer
        return
    from wikivel_bot.review import ReviewSession, resolve_reviewer
    from wikivel_bot.review.keys import open_keys
    from wikivel_bot.review.terminal import run_review

    obj: CliContext = ctx.obj
    name = resolve_reviewer(reviewer, obj.settings.review.reviewer)
    calibrated = calibrated or obj.settings.linker.calibrated or None
    if calibrated:
        _apply_calibration(obj, calibrated, filters)
    flt = build_filter(obj, (CandidateState.PROPOSED,), **filters)
    session = ReviewSession(
        obj.store(), name, flt, source="terminal",
        api_url=obj.settings.site.api_url, site_name=obj.settings.site.name, label_of=obj.item_labels(),
        order=obj.settings.review.order, threshold=obj.settings.learning.threshold,
    )
    _never_crash_on_encoding()
    from wikivel_bot.core.review_order import order_text

    click.echo(f"order: {order_text(obj.settings.review.order, obj.settings.learning.threshold)}")
    keys = open_keys(sys.stdin)
    try:
        with keys:
            run_review(session, keys, sys.stdout, suspend=keys.suspended)
    except KeyboardInterrupt:
        pass  # Ctrl-C ends the session like q: decisions are already saved
    click.echo("")
    click.echo(session.counts.summary(name))


def _apply_calibration(obj: CliContext, path: str, filters: Dict[str, Any]) -> None:
    """Narrow the filters to the calibrated linker and its threshold (``--calibrated``)."""
    from wikivel_bot.liveeval.apply import review_threshold
    from wikivel_bot.liveeval.thresholds import load_thresholds

    linker, threshold, per_category = review_threshold(load_thresholds(path), filters.get("linker_name"))
    given = filters.get("min_score")
    floor = obj.settings.linker.min_score if given is None else given
    filters["linker_name"] = linker
    filters["min_score"] = max(threshold, floor)
    click.echo(f"calibrated: {linker} suggestions scoring at least {filters['min_score']:.4f}", err=True)
    if per_category:
        click.echo("note: the review applies the linker's overall threshold; its per-category thresholds are "
                   "applied by `export --calibrated` and `suggest --calibrated`", err=True)


def _decision_command(name: str, action: DecisionAction, summary: str) -> click.Command:
    @click.command(name, help=summary)
    @click.option("--file", "file_ref", required=True, help="The file: M-id (M123) or title (File:Name.jpg).")
    @click.option("--item", "qids", required=True, multiple=True, help="A Wikidata item (Q146); repeat for several.")
    @click.option("--reviewer", help="Your Commons user name (review.reviewer).")
    @click.pass_context
    def command(ctx: click.Context, file_ref: str, qids: Tuple[str, ...], reviewer: Optional[str]) -> None:
        from wikivel_bot.review import decide, resolve_reviewer

        obj: CliContext = ctx.obj
        given = reviewer if reviewer is not None else ctx.meta.get("wikivel.reviewer")
        who = resolve_reviewer(given, obj.settings.review.reviewer)
        for done in decide(obj.store(), file_ref, qids, action, who, source="cli"):
            click.echo(f"{done.mid} {done.qid}: {action.value} by {who} (decision {done.decision_id})")
            if done.in_flight:
                click.echo(done.in_flight)

    return command


for _name, _action, _help in (
    ("approve", DecisionAction.APPROVE,
     "Approve items for a file: the writer adds them as depicts (P180) statements."),
    ("approve-prominent", DecisionAction.APPROVE_PROMINENT,
     "Approve items as prominent: written with preferred rank (the file's main subject)."),
    ("reject", DecisionAction.REJECT,
     "Reject items for a file: never proposed or written for this file again."),
    ("skip", DecisionAction.SKIP,
     "Skip items for now: they stay proposed for a later review."),
):
    review.add_command(_decision_command(_name, _action, _help))


def _never_crash_on_encoding() -> None:
    # Titles and labels come in every script; a terminal that cannot show one gets "?"
    # rather than a traceback in the middle of a session.
    reconfigure = getattr(sys.stdout, "reconfigure", None)
    if reconfigure is not None:
        reconfigure(errors="replace")
