"""``wikivel-bot suggest``: ranked depicts suggestions for images, without touching the queue."""

from __future__ import annotations

import dataclasses
import json
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Sequence, Tuple

import click

from wikivel_bot.cli import ranges
from wikivel_bot.cli.context import CliContext
from wikivel_bot.cli.dropped_evidence import dropped_evidence_lines
from wikivel_bot.cli.liveeval import calibrated_option
from wikivel_bot.cli.safety_view import notice_lines, safety_doc, withheld_entries, withheld_lines
from wikivel_bot.config import LinkerSettings
from wikivel_bot.core.evidence_view import shown_evidence
from wikivel_bot.errors import UsageError
from wikivel_bot.types import is_qid

if TYPE_CHECKING:  # the linker (torch) loads only when a command links
    from wikivel_bot.linker.factory import ReadyLinker


# Unknown options pass through as sources: pywikibot generator arguments look like
# options (-cat:Cats, -search:...); suggest_inputs rejects what is neither.
@click.command("suggest", context_settings={"ignore_unknown_options": True})
@click.argument("sources", nargs=-1, required=True, type=click.UNPROCESSED)
@click.option("--top", "top_k", type=ranges.TOP_K, help="Candidates per file (linker.top_k).")
@click.option("--linker", "linker_name", help="Linker variant, see `wikivel-bot linkers` (linker.name).")
@click.option("--labels", "labels_dir", help="Label set directory (linker.labels_dir; default: starter set).")
@click.option("--model", help="open_clip architecture, or a model config JSON (linker.model).")
@click.option("--weights", help="Local weights file, or 'random' for a smoke run (linker.weights).")
@click.option("--checkpoint", help="Trained head checkpoint (linker.checkpoint).")
@click.option("--verifier", help="Cascade checkpoint whose calibrated verifier gives every suggestion a match "
                                 "probability (linker.verifier).")
@click.option("--device", help="auto, cpu, cuda, cuda:N (linker.device).")
@click.option("--precision", help="Encoder precision: auto, fp32, bf16, int8 (linker.precision).")
@click.option("--depicts", multiple=True, help="QID a local file already depicts (repeatable).")
@click.option("--description", default="", help="Description of a local file (read by fusion).")
@click.option("--category", "categories", multiple=True, help="Category of a local file (repeatable).")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@click.option("-v", "--verbose", "verbose", count=True,
              help="List each suggestion the safety rules withheld with its score and reason, "
                   "without saying which item it was, and each item the file's own evidence named "
                   "that was not suggested, with its score and the rule or threshold that dropped it.")
@click.option("--show-withheld", is_flag=True,
              help="Name what the safety rules withheld (QID, label, score, reason) in the table "
                   "and in --json: for an operator checking the rules in a local run. Without it "
                   "only counts by rule are shown, as everywhere else.")
@click.option("--server", help="A running tool (wikivel-bot web with web.suggest) to ask first, e.g. "
                               "https://wikivel.toolforge.org (web.suggest_server): its resident linker answers "
                               "Commons files at once; without an answer, the linker is built here.")
@calibrated_option
@click.pass_obj
def suggest(
    obj: CliContext,
    sources: Tuple[str, ...],
    top_k: Optional[int],
    linker_name: Optional[str],
    labels_dir: Optional[str],
    model: Optional[str],
    weights: Optional[str],
    checkpoint: Optional[str],
    verifier: Optional[str],
    device: Optional[str],
    precision: Optional[str],
    depicts: Tuple[str, ...],
    description: str,
    categories: Tuple[str, ...],
    as_json: bool,
    verbose: int = 0,
    show_withheld: bool = False,
    calibrated: Optional[str] = None,
    server: Optional[str] = None,
) -> None:
    """Suggest depicts items for SOURCES: local image paths, File:Name.jpg, M-ids (M123),
    Commons URLs or pywikibot generator arguments. Prints rank, QID, label, description,
    score, why (the file's own evidence for the item, e.g. "Category:Eiffel Tower → Q243",
    or "image only") and the ranking notes, and how many suggestions the safety rules
    withheld (named people, sensitive classes), by rule; --show-withheld names them (-v
    lists each with its reason); --json gives each suggestion's evidence_kind and sources;
    nothing is queued or written. A source that gives no image
    gets its own error line and the others are still linked; the exit code is 2 when a
    source was malformed, 1 when a file could not be used, 0 when all were linked."""
    for qid in depicts:
        if not is_qid(qid):
            raise UsageError(f"--depicts {qid!r} is not a QID (like Q146)")
    overrides: Dict[str, Any] = {
        "name": linker_name, "labels_dir": labels_dir, "model": model, "weights": weights,
        "checkpoint": checkpoint, "verifier": verifier, "device": device, "precision": precision,
    }
    server = server if server is not None else obj.settings.web.suggest_server
    if server:
        from wikivel_bot.cli.suggest_server import ask_server, usable
        from wikivel_bot.wikidata.agent import user_agent

        own = any(v is not None for v in overrides.values()) or depicts or description or categories \
            or top_k is not None or calibrated or show_withheld or verbose
        if own or not usable(sources):
            click.echo("suggest: the service answers Commons files with its own linker and rules; linking here",
                       err=True)
        else:
            code = ask_server(server, sources, as_json, user_agent(obj.settings.site.operator_contact))
            if code is not None:
                click.get_current_context().exit(code)
    settings: LinkerSettings = dataclasses.replace(
        obj.settings.linker, **{k: v for k, v in overrides.items() if v is not None}
    )
    from wikivel_bot.labels import default_label_set

    label_set = default_label_set(settings.labels_dir)
    calibration = None
    calibrated = calibrated or obj.settings.linker.calibrated or None
    if calibrated:  # read before linking: a bad thresholds file fails fast
        from wikivel_bot.liveeval.thresholds import filter_for

        calibration = filter_for(calibrated, lambda: label_set)

    from wikivel_bot.cli.suggest_inputs import Failed, iter_inputs
    from wikivel_bot.linker.backbone.decode_budget import pixel_batches
    from wikivel_bot.linker.link import Linked

    # The daemon's builder, with this command's linker overrides and --top (evidence look-ups
    # cached in memory: suggest has no queue database).
    built = obj.ready_linker(progress=not as_json, settings=dataclasses.replace(obj.settings, linker=settings),
                             label_set=label_set, top_k=top_k,
                             given=[key for key, value in overrides.items() if value is not None])
    linker, index = built.linker, built.index
    verbose = max(verbose, obj.verbose)
    inputs = iter_inputs(sources, obj.settings, depicts=depicts, description=description, categories=categories)
    failed: List[Failed] = []
    entries: List[dict] = []  # JSON: every input in order, failures included
    if not as_json:
        _print_header(linker.description, notice_lines(obj.settings.safety, label_set))

    def ready() -> Any:
        # Failures are reported (stderr, and in order for JSON) as they come; only images
        # go on to be linked.
        for item in inputs:
            if isinstance(item, Failed):
                failed.append(item)
                click.echo(f"error: {' '.join(item.reason.split())}", err=True)
                entries.append({"source": item.source, "title": item.source, "ok": False, "reason": item.reason})
            else:
                yield item

    any_unlinked = False
    # Decoded images are the memory: link in groups of bounded pixels, reading each group's
    # bytes only now, so 32 huge PNGs cost what one or two do.
    for group in pixel_batches(ready(), lambda item: item.pixels, max_count=max(1, linker.batch_size)):
        outcomes = built.link([(item.media, item.load()) for item in group])
        if calibration is not None:
            from wikivel_bot.liveeval.apply import filter_outcomes

            outcomes = filter_outcomes(outcomes, calibration)
        any_unlinked = any_unlinked or any(not isinstance(o, Linked) for o in outcomes)
        if as_json:
            entries.extend(_file_entry(o, label_set, show_withheld) for o in outcomes)
        else:
            for outcome in outcomes:
                linked = hasattr(outcome, "candidates")
                _print_outcome(outcome, withheld_lines(outcome, label_set, verbose, show_withheld) if linked else [],
                               nothing_left_lines(outcome, built, settings.min_score, label_set, verbose,
                                                  show_withheld) if linked else [])
                if linked and verbose:
                    # The file's evidence that did not become a suggestion, one line each, and why.
                    for line in dropped_evidence_lines(outcome, built, settings.min_score, label_set, show_withheld):
                        click.echo(line)
        del group, outcomes
    if as_json:
        doc = _as_json(linker.description, label_set, index, entries)
        doc["safety"] = safety_doc(obj.settings.safety, label_set)
        if calibration is not None:
            doc["calibrated"] = {"thresholds": calibrated, "kept": calibration.kept, "left_out": calibration.removed,
                                 "summary": calibration.summary()}
        click.echo(json.dumps(doc, indent=2, ensure_ascii=False))
    else:
        _print_footer(linker.description)
        if calibration is not None:
            click.echo("")
            click.echo(calibration.summary())
    if any(f.usage for f in failed):
        click.get_current_context().exit(2)
    if failed or any_unlinked:
        click.get_current_context().exit(1)


def _file_entry(outcome: Any, label_set: Any, show_withheld: bool = False) -> dict:
    # The one JSON of a file's outcome, shared with the resident service (GET /api/suggest).
    from wikivel_bot.resident.answer import file_entry

    named = withheld_entries(outcome, label_set) if show_withheld and hasattr(outcome, "candidates") else None
    return file_entry(outcome, named)


def _as_json(description: Any, label_set: Any, index: Any, files: Sequence[dict]) -> dict:
    from wikivel_bot.resident.answer import document

    return document(description, label_set, index, files)


def _print_header(description: Any, notices: Sequence[str] = ()) -> None:
    click.echo(f"linker: {description.version} on {description.device}{_precision(description)}")
    for warning in description.warnings:
        click.echo(f"WARNING: {warning}")
    for notice in notices:
        click.echo(notice)


def nothing_left_lines(outcome: Any, built: "ReadyLinker", min_score: float, label_set: Any, verbose: int,
                       show_withheld: bool = False) -> List[str]:
    """Why a linked file got no suggestion: which threshold dropped how many of its scored
    items (a learned checkpoint's operating threshold replaces ``linker.min_score``, so the
    setting the operator reads may not be the one that dropped them) and, with -v, every
    dropped item with its score and reason. Items a safety rule covers are named only with
    --show-withheld, as everywhere else.

    :param built: the ``ReadyLinker`` (its rules, and the operating threshold if any).
    :param min_score: ``linker.min_score`` as configured.
    """
    if outcome.candidates:
        return []
    from wikivel_bot.core.ranking import describe_item

    dropped = list(outcome.ranking.dropped)
    below = [d for d in dropped if d.reason.startswith("score ") and " below the threshold " in d.reason]
    best = f"; the best scored {max(d.score for d in dropped):.4f}" if dropped else ""
    hint = "" if verbose or not dropped else "; -v lists what was dropped and why"
    threshold = built.rules.min_score
    if below and built.operating_threshold is not None:
        source = built.operating_checkpoint or "the learned checkpoint"
        head = (f"(no suggestions: {len(below)} of {len(dropped)} scored items are below the operating "
                f"threshold {threshold:.4f} of the learned checkpoint {source}, which replaces "
                f"linker.min_score {min_score:.4f}{best}{hint})")
    elif below:
        head = (f"(no suggestions: {len(below)} of {len(dropped)} scored items are below linker.min_score "
                f"{threshold:.4f}{best}{hint})")
    else:
        head = f"(no suggestions left after the ranking rules: {len(dropped)} dropped{best}{hint})"
    lines = [f"  {head}"]
    if verbose:
        covered = 0
        withheld = set(outcome.ranking.withheld)
        named = {ev.qid for ev in getattr(outcome, "evidence", ())}
        for d in dropped:
            if d in withheld:
                continue  # withheld_lines shows these, in the safety rules' words
            if d.qid in named:
                continue  # dropped_evidence_lines shows these, with the evidence that named them
            if d.rule and not show_withheld:
                covered += 1  # a safety rule's item: counted, never named without --show-withheld
                continue
            label = describe_item(label_set, d.qid)[0]
            name = f"{d.qid} ({label})" if label else d.qid
            lines.append(f"    dropped {name} {d.score:.4f}: {d.reason}")
        if covered:
            lines.append(f"    and {covered} more that a safety rule covers too (--show-withheld names them)")
    return lines


def _print_outcome(outcome: Any, withheld: Sequence[str] = (), nothing_left: Sequence[str] = ()) -> None:
    """One file's table, then what the safety rules withheld (one by one with -v); for a
    file with no suggestion, why (``nothing_left``) instead of the table."""
    from wikivel_bot.core.review_rules import format_signals

    click.echo("")
    click.echo(f"{outcome.media.title}")
    if not hasattr(outcome, "candidates"):
        click.echo(f"  not linked: {outcome.reason}")
        return
    if not outcome.candidates:
        for line in nothing_left or ["  (no suggestions left after the ranking rules)"]:
            click.echo(line)
        for line in withheld:
            click.echo(line)
        return
    # The evidence texts are never cut (a reviewer checks them): the column is as wide as
    # this file's longest.
    whys = [shown_evidence(c.evidence).why() for c in outcome.candidates]
    width = max(len("why"), *map(len, whys))
    click.echo(f"  {'rank':>4}  {'QID':<11} {'label':<24} {'description':<32} {'score':>7}  {'why':<{width}}  notes")
    for c, why in zip(outcome.candidates, whys):
        label = _cut(str(c.evidence.get("label", "")), 24)
        text = _cut(str(c.evidence.get("description", "")), 32)
        signals = format_signals(c.alpha, c.probability)  # cascade: P(match), image/text shares
        notes = "; ".join([signals] * bool(signals) + list(c.evidence.get("notes", [])))
        click.echo(f"  {c.rank:>4}  {c.qid:<11} {label:<24} {text:<32} {c.score:>7.4f}  {why:<{width}}  {notes}"
                   .rstrip())
    for line in withheld:
        click.echo(line)


def _print_footer(description: Any) -> None:
    if description.random_weights:
        click.echo("")
        click.echo("(random weights: these suggestions are meaningless)")


def _precision(description: Any) -> str:
    """`` in bf16 (CPU has avx512_bf16)``, or '' for linkers without a model."""
    precision = getattr(description, "precision", "")
    if not precision:
        return ""
    reason = getattr(description, "precision_reason", "")
    return f" in {precision}" + (f" ({reason})" if reason else "")


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"
