"""Learning from reviewers (docs/learning.md): ``dataset from-decisions``, the
``train --from-decisions`` mode, and ``models`` (list, promote, rollback).

torch loads only inside ``train --from-decisions``.
"""

from __future__ import annotations

import getpass
from pathlib import Path
from typing import Any, List, Optional, Tuple

import click

from wikivel_bot.cli.context import CliContext
from wikivel_bot.errors import UsageError


@click.command("from-decisions")
@click.option("--out", "out_dir", required=True, type=click.Path(file_okay=False, path_type=Path),
              help="Dataset directory to write (its images/ is the thumbnail cache: kept images are not fetched again).")
@click.option("--reviewer-cap", type=click.IntRange(0, 10**9),
              help="Decisions kept per reviewer, the newest (default: learning.reviewer_cap; 0 = no cap).")
@click.option("--exclude-reviewer", "excluded", multiple=True,
              help="Leave this reviewer's decisions out (repeatable; adds to learning.exclude_reviewers).")
@click.option("--split", "split_text", default="0.6,0.2,0.2", show_default=True,
              help="Shares of train, calibration and evaluation, by file in upload order.")
@click.option("--fetch-images/--no-fetch-images", default=True, show_default=True,
              help="Fetch the thumbnails not yet in OUT/images (politely, as the fetcher does).")
@click.pass_obj
def dataset_from_decisions(obj: CliContext, out_dir: Path, reviewer_cap: Optional[int], excluded: Tuple[str, ...],
                           split_text: str, fetch_images: bool) -> None:
    """Turn the queue's human decisions into training records: approvals (prominent too) are
    positives, rejections hard negatives; skips, dry runs and the bot's own outcomes never
    count, and a decision later undone, replaced or reverted is dropped. Files are split in
    upload order (evaluation always on later files than training)."""
    from wikivel_bot.learning.dataset import build_from_decisions
    from wikivel_bot.learning.splits import parse_shares

    shares = parse_shares(split_text)
    learning = obj.settings.learning
    cap = learning.reviewer_cap if reviewer_cap is None else reviewer_cap
    exclude = tuple(sorted(set(learning.exclude_reviewers) | set(excluded)))
    store = obj.store()
    fetch = None
    client = None
    if fetch_images:
        from wikivel_bot.commons.thumbnails import ThumbnailClient

        client = ThumbnailClient.from_settings(obj.settings.fetch, obj.settings.site.operator_contact)
        fetch = client.get
    try:
        built = build_from_decisions(store, out_dir, reviewer_cap=cap, exclude=exclude, shares=shares, fetch=fetch)
    finally:
        if client is not None:
            client.close()
    card = built.card
    click.echo(f"decisions: {card['decisions']} read, {card['kept']} kept"
               + "".join(f", {n} {why}" for why, n in card["dropped"].items()))
    click.echo(f"files: {card['files']} ({card['images_missing']} without an image, "
               f"{card['images_fetched']} fetched)")
    for name, split in card["splits"].items():
        span = " to ".join(split["uploaded"]) if split["uploaded"] else "-"
        click.echo(f"{name}: {split['files']} files, {split['approved']} approved, {split['rejected']} rejected "
                   f"(uploaded {span})")
    click.echo(f"wrote {out_dir}")


def train_from_decisions(obj: CliContext, data_dir: Path, promote: bool, **linker: object) -> None:
    """``train --from-decisions DIR``: a challenger from the running checkpoint, judged on the
    later held-out decisions, promoted only when it wins.

    :param linker: ``train``'s --model/--weights/--device/--threads (None: the settings').
    """
    from wikivel_bot.commons.providers import item_image_source
    from wikivel_bot.learning.cycle import train_challenger

    settings = obj.settings.replace("linker", **{k: v for k, v in linker.items() if v is not None})

    def labelset_hash() -> str:
        from wikivel_bot.labels import default_label_set

        return default_label_set(settings.linker.labels_dir).content_hash

    # The label set and item images are asked for by a cascade and to re-fit a verifier's calibration.
    result = train_challenger(data_dir, settings, labelset_hash=labelset_hash, by=_who(settings), promote=promote,
                              progress=lambda line: click.echo(line, err=True), label_set=obj.label_set,
                              item_images=item_image_source(settings, obj.site))
    verdict = result.verdict
    click.echo(f"challenger: {result.name} ({result.checkpoint})")
    for name in ("utility", "precision", "recall", "R@1", "nDCG@5"):
        d = verdict.deltas[name]
        click.echo(f"  {name:9} champion {verdict.champion[name]:.3f}  challenger {verdict.challenger[name]:.3f}  "
                   f"change {d['delta']:+.3f} [{d['low']:+.3f}, {d['high']:+.3f}]")
    word = "promoted: now running" if result.promoted else ("wins, not promoted (--no-promote)"
                                                             if verdict.promote else "kept, not promoted")
    click.echo(f"verdict: {word} — " + "; ".join(verdict.reasons))
    if result.recalibrated:
        click.echo(f"running model recalibrated (same weights): {result.recalibrated} now runs "
                   "(`wikivel-bot models rollback` undoes it)")


@click.group("models", invoke_without_command=True)
@click.option("--models-dir", help="Models directory (default: learning.models_dir).")
@click.pass_context
def models(ctx: click.Context, models_dir: Optional[str]) -> None:
    """List the checkpoints learned from reviewers' decisions, their verdicts, and which one
    runs (`models promote NAME`, `models rollback` change that, audited). These work even when
    the running checkpoint's file is gone, which stops every command that builds a linker."""
    obj: CliContext = ctx.obj
    root = models_dir or obj.settings.learning.models_dir
    if not root:
        raise UsageError("no models directory: set learning.models_dir (or --models-dir)")
    ctx.meta["models_dir"] = root
    if ctx.invoked_subcommand is not None:
        return
    from wikivel_bot.learning import registry

    entries = registry.list_models(root)
    running = next((e for e in entries if e.running), None)
    nothing = f"(none promoted: linker.checkpoint {obj.settings.linker.checkpoint!r})"
    click.echo(f"running: {running.name if running else nothing}")
    if running is not None and running.missing:
        click.echo(f"MISSING: {running.path} is gone, so every command that builds a linker refuses to start; "
                   "`wikivel-bot models rollback` runs the one that ran before (or linker.checkpoint), "
                   "`wikivel-bot models promote NAME` another")
    for e in entries:
        if e.missing:
            click.echo(f"* {e.name}  MISSING {e.path}")
            continue
        verdict = e.report.get("verdict", {})
        ch = verdict.get("challenger", {})
        shown = " ".join(f"{k}={ch[k]:.3f}" for k in ("precision", "recall", "nDCG@5") if isinstance(ch.get(k), float))
        click.echo(f"{'*' if e.running else ' '} {e.name}  {e.report.get('created', '?')}  "
                   f"verdict={verdict.get('outcome', '?')}  {shown}")


@models.command("promote")
@click.argument("name")
@click.option("--reason", default="", help="Why (recorded in the audit line).")
@click.option("--force", is_flag=True, help="Promote although its judgement said keep (audited as forced).")
@click.pass_context
def promote(ctx: click.Context, name: str, reason: str, force: bool) -> None:
    """Run checkpoint NAME from now on (suggest and link at once, the daemon at its next link round).
    Only a checkpoint whose judgement said promote, or a recalibration of a running model, unless --force."""
    from wikivel_bot.learning import registry

    root = Path(ctx.meta["models_dir"])
    registry.require_checkpoint(root, name)  # a missing one is not "did not win its judgement"
    outcome = registry.read_report(root / name).get("verdict", {}).get("outcome")
    won = outcome in ("promote", "recalibrated")  # a recalibration is the running model's own weights
    if not won and not force:
        raise UsageError(f"{name} did not win its judgement (verdict: {outcome or 'none'}); "
                         "promote it anyway with --force")
    why = reason or "by hand"
    before = registry.promote(root, name, by=_who(ctx.obj.settings),
                              reason=f"forced ({outcome or 'no verdict'}): {why}" if not won else why)
    _card(root, name)
    click.echo(f"running: {name} (was {before or 'linker.checkpoint'}; the daemon takes it at its next link round)")


@models.command("rollback")
@click.option("--reason", default="", help="Why (recorded in the audit line).")
@click.pass_context
def rollback(ctx: click.Context, reason: str) -> None:
    """Run the checkpoint that ran before the current one (or linker.checkpoint)."""
    from wikivel_bot.learning import registry

    root = Path(ctx.meta["models_dir"])
    after = registry.rollback(root, by=_who(ctx.obj.settings), reason=reason or "by hand")
    if after:
        _card(root, after)
    else:
        # Nothing learned runs any more: a card of the running model would describe the wrong one.
        (root / "model-card.md").unlink(missing_ok=True)
    click.echo(f"running: {after or 'linker.checkpoint (nothing promoted)'}")


def _card(root: Path, name: str) -> None:
    from wikivel_bot.learning import registry
    from wikivel_bot.learning.card import write_cards

    report = registry.read_report(root / name)
    if report:
        # The card's date and author: the audit line just written for this change.
        last = registry.audit_lines(root)[-1]
        write_cards(root, name, report, promoted_at=str(last.get("at", "")), by=str(last.get("by", "")))


def _who(settings: object) -> str:
    reviewer = getattr(getattr(settings, "review", None), "reviewer", "")
    if reviewer:
        return str(reviewer)
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return "unknown"


def learning_status_lines(settings: Any) -> List[str]:
    """``status``: the review order in use and, with a models directory, what runs."""
    from wikivel_bot.core.review_order import order_text

    lines = [f"review order: {order_text(settings.review.order, settings.learning.threshold)}"]
    root = settings.learning.models_dir
    if root:
        from wikivel_bot.learning import registry

        running = registry.read_registry(root).get("running") if Path(root).is_dir() else None
        every = f"every {settings.learning.schedule_hours:g} h" if settings.learning.schedule_hours else "off"
        lines.append(f"learning: running {running or 'linker.checkpoint (nothing promoted)'}; "
                     f"scheduled rounds {every} ({root})")
        problem = registry.running_model_problem(root)
        if problem:  # said here; only what builds a linker refuses to start
            lines.append(f"learning: PROBLEM: {problem}")
    return lines
