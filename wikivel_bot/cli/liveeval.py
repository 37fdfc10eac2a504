"""``wikivel-bot evaluate-live``, ``calibrate`` and ``report``: the community-trial dry run.

``evaluate-live`` runs the linker on files that humans already tagged (statements hidden),
``calibrate`` turns its results into score thresholds checked on held-out files, ``report``
writes the HTML page and the wikitext for the bot request. See docs/community-trial.md.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, List, Optional, Sequence, Tuple

import click

from wikivel_bot.cli import ranges
from wikivel_bot.cli.context import CliContext
from wikivel_bot.errors import UsageError

_PATH = click.Path(exists=True, dir_okay=False, path_type=Path)


CALIBRATED_HELP = ("Only suggestions reaching the thresholds of `wikivel-bot calibrate` for their linker "
                   "(and super-category, when calibrated per category). Default: linker.calibrated.")
REVIEW_CALIBRATED_HELP = ("Only suggestions of the calibrated linker reaching its overall threshold from "
                          "`wikivel-bot calibrate` (per-category thresholds: use export --calibrated).")


def calibrated_option(command: Any, help_text: str = CALIBRATED_HELP) -> Any:
    """Add the ``--calibrated THRESHOLDS.json`` option (suggest, export, review) to ``command``."""
    return click.option(
        "--calibrated", "calibrated", type=click.Path(exists=True, dir_okay=False), metavar="THRESHOLDS.json",
        help=help_text,
    )(command)


def review_calibrated_option(command: Any) -> Any:
    """``--calibrated`` as the review applies it (one threshold per linker)."""
    return calibrated_option(command, REVIEW_CALIBRATED_HELP)


def _open_for_writing(path: Path) -> Any:
    try:
        return open(path, "w", encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"cannot write {path}: {exc.strerror}") from None


def _parse_ks(text: str) -> Tuple[int, ...]:
    from wikivel_bot.cli.evaluate import parse_ks

    return parse_ks(text)


@click.command("evaluate-live", context_settings={"ignore_unknown_options": True})
@click.argument("generator_args", nargs=-1, type=click.UNPROCESSED, metavar="[-cat:NAME ...]")
@click.option("--since", metavar="DATE", help="Files uploaded on or after DATE (YYYY-MM-DD or ISO time, UTC). "
              "Default: the newest poll.batch_size uploads.")
@click.option("--until", metavar="DATE", help="Files uploaded up to DATE (a date includes that whole day).")
@click.option("--limit", type=ranges.count(), help="Stop after N files compared.")
@click.option("--top", "top_k", type=ranges.TOP_K, help="Suggestions per file (linker.top_k).")
@click.option("--k", "ks_text", default="1,5,10", show_default=True, metavar="K,K,...",
              help="Cut-offs of the summary printed at the end.")
@click.option("--linker", "linker_name", help="Linker variant (linker.name), see `wikivel-bot linkers`.")
@click.option("--labels", "labels_dir", help="Label set directory (linker.labels_dir; default: starter set).")
@click.option("--model", help="open_clip architecture, or a model config JSON (linker.model).")
@click.option("--weights", help="Local weights file, or 'random' for a smoke run (linker.weights).")
@click.option("--checkpoint", help="Trained head checkpoint (linker.checkpoint).")
@click.option("--verifier", help="Cascade checkpoint whose calibrated verifier gives every suggestion a match "
                                 "probability (linker.verifier).")
@click.option("--device", help="auto, cpu, cuda, cuda:N (linker.device).")
@click.option("--out", "out_path", default="results.jsonl", show_default=True,
              type=click.Path(dir_okay=False, path_type=Path), help="Per-file results (JSON Lines).")
@click.option("--truth-out", type=click.Path(dir_okay=False, path_type=Path), metavar="T.jsonl",
              help='Also write the human items as {"file", "items"} lines (for `wikivel-bot evaluate --truth`).')
@click.pass_obj
def evaluate_live(obj: CliContext, generator_args: Tuple[str, ...], since: Optional[str], until: Optional[str],
                  limit: Optional[int], top_k: Optional[int], ks_text: str, linker_name: Optional[str],
                  labels_dir: Optional[str], model: Optional[str], weights: Optional[str], checkpoint: Optional[str],
                  verifier: Optional[str], device: Optional[str], out_path: Path, truth_out: Optional[Path]) -> None:
    """Self-check against human depicts: run the linker on recent files that already carry
    human P180 statements (from the upload log, or pywikibot generator arguments such as
    -cat:NAME), with those statements hidden from it, and compare. Saves one JSON line per
    file (human items, suggestions with scores and evidence, hits at hops 0-3, the writer's
    verdicts) and prints precision@k, recall@k, Diversity Recall@k and precision by evidence
    kind (image only, category, category label, link, identifier, several). Nothing is
    queued or written.

    \b
    wikivel-bot evaluate-live --since 2026-11-01 --limit 500 --out results.jsonl
    wikivel-bot evaluate-live -cat:Cats --out cats.jsonl
    """
    from wikivel_bot.core.review_rules import parse_time_bound
    from wikivel_bot.liveeval.aggregate import summarize_run
    from wikivel_bot.liveeval.live import evaluate_live as run_live
    from wikivel_bot.liveeval.live import run_info, select_uploads
    from wikivel_bot.liveeval.records import write_result, write_truth
    from wikivel_bot.liveeval.tables import evidence_table, metrics_table, writer_table

    for arg in generator_args:
        if not arg.startswith("-"):
            raise UsageError(f"{arg!r}: give files as pywikibot generator arguments (-cat:NAME, -file:..., "
                             "-search:...) or choose them by upload time with --since/--until")
    ks = _parse_ks(ks_text)
    start = parse_time_bound(since) if since else None
    end = parse_time_bound(until, end=True) if until else None
    for key, value in {"name": linker_name, "labels_dir": labels_dir, "model": model, "weights": weights,
                       "checkpoint": checkpoint, "verifier": verifier, "device": device}.items():
        if value is not None:
            obj.overrides[("linker", key)] = value
    settings = obj.settings
    top = top_k or settings.linker.top_k
    site = obj.site()
    ready = obj.ready_linker(top_k=top)
    linker = ready.linker
    label_set = linker.label_set
    selection = " ".join(generator_args) if generator_args else "upload log"
    selection += (f", uploaded from {since}" if since else "") + (f" up to {until}" if until else "")
    run = run_info(settings, linker, label_set, selection, top)
    if run.random_weights:
        click.echo("WARNING: random weights: the suggestions, and so these numbers, are meaningless", err=True)
    results: List[Any] = []
    partial = out_path.with_name(out_path.name + ".part")
    interrupted = False
    handle = _open_for_writing(partial)
    truth_handle = _open_for_writing(truth_out) if truth_out else None

    def sink(result: Any) -> None:
        write_result(handle, result)
        if truth_handle is not None:
            write_truth(truth_handle, result)
        results.append(result)

    def progress(counts: Any) -> None:
        click.echo(f"... {counts.evaluated} files compared ({counts.seen} looked at)", err=True)

    counts = None
    try:
        uploads = select_uploads(site, settings, generator_args=generator_args, since=start, until=end)
        counts = run_live(site, ready, uploads, sink, settings=settings, run=run, limit=limit, progress=progress)
    except KeyboardInterrupt:
        interrupted = True
    finally:
        handle.close()
        if truth_handle is not None:
            truth_handle.close()
        # Keep what was compared, even after an interruption or a wiki error.
        os.replace(partial, out_path)
    if counts is not None:
        for line in counts.lines():
            click.echo(line)
    if interrupted:
        click.echo(f"interrupted: {len(results)} files compared so far", err=True)
    also = f" and the human items to {truth_out}" if truth_out else ""
    click.echo(f"wrote {len(results)} results to {out_path}{also}")
    if not results:
        click.echo("no file with human depicts statements was compared: nothing to measure", err=True)
        click.get_current_context().exit(1)
    summary = summarize_run(results, ks)
    click.echo("")
    click.echo(metrics_table(summary).markdown())
    click.echo(evidence_table(summary).markdown())
    click.echo(writer_table(summary).markdown())


@click.command("calibrate")
@click.argument("results_paths", nargs=-1, required=True, type=_PATH, metavar="RESULTS.jsonl...")
@click.option("--target", type=ranges.FINITE_FLOAT, default=0.9, show_default=True,
              help="Precision the accepted suggestions must reach on the calibration files.")
@click.option("--hops", type=click.IntRange(0, 3), default=0, show_default=True,
              help="Hop credit for 'correct' (0: only the human item itself).")
@click.option("--holdout", type=ranges.FINITE_FLOAT, default=0.5, show_default=True,
              help="Share of files held out to check the thresholds (split by a hash of the file id).")
@click.option("--min-support", type=ranges.count(), default=10, show_default=True,
              help="Suggestions a threshold must accept to count (per super-category too).")
@click.option("--by-category", is_flag=True, help="Also one threshold per super-category of the suggestions.")
@click.option("--out", "out_path", default="thresholds.json", show_default=True,
              type=click.Path(dir_okay=False, path_type=Path), help="Thresholds file to write.")
@click.option("--json", "as_json", is_flag=True, help="Print the thresholds document instead of a table.")
@click.option("--on", "on", type=click.Choice(["score", "probability"]), default="score", show_default=True,
              help="Threshold the linker's score, or the verifier's calibrated match probability (the cascade's, "
                   "or any linker's with linker.verifier).")
def calibrate(results_paths: Sequence[Path], target: float, hops: int, holdout: float, min_support: int,
              by_category: bool, out_path: Path, as_json: bool, on: str) -> None:
    """Score calibration: per linker (and with --by-category per super-category), the lowest
    score threshold whose suggestions reach --target precision on one part of the files,
    and the precision it reaches on the held-out part. suggest, export and review apply the
    written file with --calibrated.

    \b
    wikivel-bot calibrate results.jsonl --target 0.9 --out thresholds.json
    """
    from wikivel_bot.liveeval.calibrate import calibrate_results
    from wikivel_bot.liveeval.records import read_results
    from wikivel_bot.liveeval.tables import thresholds_table
    from wikivel_bot.liveeval.thresholds import write_thresholds

    results = read_results(list(results_paths))
    document = calibrate_results(results, target=target, hops=hops, holdout=holdout, min_support=min_support,
                                 by_category=by_category, sources=[str(p) for p in results_paths], on=on)
    write_thresholds(document, out_path)
    if as_json:
        click.echo(json.dumps(document, indent=2, ensure_ascii=False))
    else:
        click.echo(thresholds_table(document).markdown())
    for name, entry in document["linkers"].items():
        if entry["threshold"] is None:
            best = entry["calibration"]
            click.echo(f"{name}: target {target:g} NOT reached (best precision {best['best_precision']:.3f} at "
                       f"{best['best_threshold']}): with --calibrated, none of its suggestions pass", err=True)
        elif entry["held_out"]["accepted"] and not entry["held_out"]["reached"]:
            click.echo(f"{name}: the held-out files reach only {entry['held_out']['precision']:.3f}, below the "
                       f"target: collect more files before trusting the threshold", err=True)
    click.echo(f"wrote {out_path}", err=True)


@click.command("report")
@click.argument("more_sheets", nargs=-1, type=_PATH, metavar="[SHEET.csv]...")
@click.option("--results", "results_paths", multiple=True, required=True, type=_PATH, metavar="RESULTS.jsonl",
              help="Results of evaluate-live (repeat for several linkers).")
@click.option("--thresholds", "thresholds_path", type=_PATH, metavar="THRESHOLDS.json",
              help="Thresholds of `wikivel-bot calibrate`, shown with their held-out precision.")
@click.option("--ratings", multiple=True, type=_PATH, metavar="SHEET.csv",
              help="Filled rating sheets of `wikivel-bot human-eval export`, one per rater (--ratings a.csv "
                   "b.csv also works: sheets after the options are ratings too).")
@click.option("--out", "out_dir", required=True, type=click.Path(file_okay=False, path_type=Path),
              help="Directory for report.html, report.wiki, summary.json and the figures.")
@click.option("--k", "ks_text", default="1,5,10", show_default=True, metavar="K,K,...", help="Cut-offs of the tables.")
@click.option("--examples", type=ranges.count(0, 10_000), default=6, show_default=True,
              help="Hits and misses shown per linker, with thumbnails.")
def report(more_sheets: Sequence[Path], results_paths: Sequence[Path], thresholds_path: Optional[Path],
           ratings: Sequence[Path], out_dir: Path, ks_text: str, examples: int) -> None:
    """Write the trial report: an HTML page with plots (precision and recall by k, by score
    band, by super-category), precision by evidence kind, examples with thumbnails, the calibrated thresholds and the
    human evaluation (rating shares and Fleiss' kappa), plus a wikitext version for the bot
    request on Commons. Every number states what it was measured on."""
    from wikivel_bot.evaluation import SheetError, read_sheets, summarize
    from wikivel_bot.liveeval.records import read_results
    from wikivel_bot.liveeval.report import write_report
    from wikivel_bot.liveeval.thresholds import load_thresholds

    ks = _parse_ks(ks_text)
    results = read_results(list(results_paths))
    thresholds = load_thresholds(thresholds_path).document if thresholds_path else None
    sheets = list(ratings) + list(more_sheets)
    rated = None
    if sheets:
        try:
            rated = summarize(read_sheets(sheets))
        except SheetError as exc:
            for problem in exc.problems:
                click.echo(problem, err=True)
            raise
    written = write_report(results, out_dir, thresholds=thresholds, ratings=rated, ks=ks, examples=examples,
                           sources=[str(p) for p in results_paths])
    for path in written.values():
        click.echo(f"wrote {path}")
