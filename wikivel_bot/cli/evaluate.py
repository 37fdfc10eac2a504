"""``wikivel-bot evaluate`` and ``wikivel-bot human-eval``: score ranked output, run a rating study.

``evaluate`` scores rankings from a source against ground truth: a predictions file
(``--predictions``), so any tool's output can be compared on the same split, or a trained
linker (``--checkpoint``, run by :mod:`wikivel_bot.cli.evaluate_checkpoint` and ``wikivel_bot.evaluation.runs.checkpoint``)
with the baselines beside it, feeding the same :func:`wikivel_bot.evaluation.score_rankings`.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, List, Optional, Sequence, Tuple

import click

from wikivel_bot.cli import ranges
from wikivel_bot.errors import UsageError

_FORMATS = ("markdown", "html", "json")
_PATH = click.Path(exists=True, dir_okay=False, path_type=Path)
_DIR = click.Path(exists=True, file_okay=False, path_type=Path)


def parse_ks(text: str) -> Tuple[int, ...]:
    """``"1,5,10"`` -> (1, 5, 10)."""
    try:
        values = tuple(sorted({int(part) for part in text.split(",") if part.strip()}))
    except ValueError:
        raise UsageError(f"--k takes positive integers separated by commas, like 1,5,10 (not {text!r})") from None
    if not values or values[0] < 1:
        raise UsageError(f"--k takes positive integers separated by commas, like 1,5,10 (not {text!r})")
    return values


def parse_hops(text: str) -> Tuple[int, ...]:
    """``"0..3"`` -> (0, 1, 2, 3); ``"0,2"`` -> (0, 2); ``"1"`` -> (1,)."""
    message = f"--hops takes levels 0 to 3 as a range or a list, like 0..3 or 0,2 (not {text!r})"
    try:
        if ".." in text:
            low, high = (int(part) for part in text.split("..", 1))
            values = tuple(range(low, high + 1))
        else:
            values = tuple(sorted({int(part) for part in text.split(",") if part.strip()}))
    except ValueError:
        raise UsageError(message) from None
    if not values or min(values) < 0 or max(values) > 3:
        raise UsageError(message)
    return values


def _write(text: str, out_path: str) -> None:
    if out_path == "-":
        click.echo(text, nl=False)
        return
    try:
        Path(out_path).write_text(text, encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"cannot write {out_path}: {exc.strerror or exc}") from None
    click.echo(f"wrote {out_path}", err=True)


@click.command("evaluate")
@click.option("--predictions", type=_PATH, metavar="P.jsonl",
              help='Ranked output to score, one line per file: {"file": "M123", "items": ["Q146", ...]} '
                   "(best first; .gz allowed).")
@click.option("--truth", type=_PATH, metavar="T.jsonl",
              help='Ground truth, same format: {"file": "M123", "items": ["Q146"]}.')
@click.option("--labels", "labels_dir", type=_DIR, metavar="DIR",
              help="Label set giving hop credit: a prediction that is an ancestor of a true item "
                   "within n hops counts as correct at hops n.")
@click.option("--k", "ks_text", default="1,5,10", show_default=True, metavar="K,K,...",
              help="Cut-offs, comma separated (the report uses 1,5,10,20,50,100).")
@click.option("--hops", "hops_text", metavar="LEVELS",
              help="Hop levels: 0..3, 0,2 or 1. Default: 0..3 with --labels, else 0.")
@click.option("--format", "fmt", type=click.Choice(_FORMATS), default="markdown", show_default=True,
              help="markdown: a table like the paper's Table 4, one row per hop level; html: a "
                   "standalone page; json: every metric as a fraction.")
@click.option("--json", "as_json", is_flag=True, help="Same as --format json.")
@click.option("--out", "out_path", default="-", show_default=True,
              type=click.Path(dir_okay=False, allow_dash=True), help="Output file; - is standard output.")
@click.option("--checkpoint", type=_PATH, metavar="CKPT",
              help="Instead of --predictions: a trained head (best.pt of `wikivel-bot train`), run with the "
                   "zero-shot, random-freq and top-k baselines on --split of --data (k defaults to 1,5,10,20,50,100).")
@click.option("--data", "data_dir", type=_DIR, metavar="DIR", help="Dataset directory (with --checkpoint).")
@click.option("--split", type=click.Choice(["test", "validation", "train"]), default="test", show_default=True,
              help="Split to score (with --checkpoint).")
@click.option("--images", "images_dir", type=_DIR, metavar="DIR", help="Images (with --checkpoint; default DATA/images).")
@click.option("--baselines", default="zero-shot,random-freq,top-k", show_default=True,
              help="Baselines run beside the checkpoint, comma separated ('' for none).")
@click.option("--report", "report_dir", type=click.Path(file_okay=False, path_type=Path), metavar="DIR",
              help="With --checkpoint: also write report.md, report.html (with plots), results.json and "
                   "model-card.md to DIR.")
@click.option("--limit", type=ranges.count(), help="With --checkpoint: score only the first N files of the split.")
@click.option("--weights", help="With --checkpoint: local weights file of its backbone (default: its tag).")
@click.option("--device", help="With --checkpoint: auto, cpu, cuda (default: linker.device).")
@click.pass_context
def evaluate(ctx: click.Context, predictions: Optional[Path], truth: Optional[Path], labels_dir: Optional[Path],
             ks_text: str, hops_text: Optional[str], fmt: str, as_json: bool, out_path: str,
             checkpoint: Optional[Path], data_dir: Optional[Path], split: str, images_dir: Optional[Path],
             baselines: str, report_dir: Optional[Path], limit: Optional[int], weights: Optional[str],
             device: Optional[str]) -> None:
    """Score ranked depicts predictions against ground truth: Recall@k, Diversity Recall@k,
    mAP@k, precision@k, nDCG@k and MRR (paper §4.4), with hop credit through a label set.

    Truth files without a prediction line count as empty rankings; predicted files without
    truth are not scored; both are listed under the table. A bad line stops with its file
    and line number.

    With --checkpoint, the trained linker and the baselines rank the --split files of a
    dataset themselves, and the output is laid out like the paper's Table 4.

    \b
    wikivel-bot evaluate --predictions p.jsonl --truth t.jsonl --labels labels/ --k 1,5,10,100
    wikivel-bot evaluate --checkpoint runs/naive-mlp/best.pt --data data/wikivel --report reports/
    """
    from wikivel_bot.evaluation import evaluate_files, evaluation_table, html_page

    fmt = "json" if as_json else fmt
    if checkpoint is not None:
        from click.core import ParameterSource

        from wikivel_bot.cli.evaluate_checkpoint import evaluate_checkpoint_mode
        from wikivel_bot.evaluation import REPORT_KS

        explicit_k = ctx.get_parameter_source("ks_text") != ParameterSource.DEFAULT
        text = evaluate_checkpoint_mode(
            ctx.obj, checkpoint=checkpoint, data=data_dir, split=split, labels=labels_dir, images=images_dir,
            baselines=baselines, ks=parse_ks(ks_text) if explicit_k else REPORT_KS,
            hops=parse_hops(hops_text) if hops_text is not None else None, report_dir=report_dir, limit=limit,
            weights=weights, device=device, fmt=fmt,
        )
        _write(text, out_path)
        return
    if predictions is None:
        raise UsageError("evaluate needs rankings to score: give --predictions P.jsonl (or --checkpoint CKPT)")
    if truth is None:
        raise UsageError("evaluate needs ground truth: give --truth T.jsonl")
    ks = parse_ks(ks_text)
    hops = parse_hops(hops_text) if hops_text is not None else None
    report = evaluate_files(predictions, truth, labels=labels_dir, ks=ks, hops=hops)
    if fmt == "json":
        text = json.dumps(report.to_dict(), indent=2) + "\n"
    elif fmt == "html":
        text = html_page([evaluation_table(report)])
    else:
        text = evaluation_table(report).markdown()
    _write(text, out_path)


@click.group("human-eval")
def human_eval() -> None:
    """The paper's human evaluation (§5.2): export rating sheets of top predictions, then
    score the filled sheets of several raters (rating shares at k = 1, 5, 10 and Fleiss' kappa).

    Ratings: CC completely correct, TG too generic, OR only related, CI completely incorrect,
    IDK I don't know.
    """


@human_eval.command("export")
@click.option("--predictions", required=True, type=_PATH, metavar="P.jsonl",
              help='Ranked output, one line per file: {"file": "M123", "items": ["Q146", ...]}.')
@click.option("--sample", type=ranges.count(), default=100, show_default=True,
              help="Files to draw at random (all when there are fewer).")
@click.option("--top", type=ranges.TOP_K, default=10, show_default=True, help="Predictions per file.")
@click.option("--seed", type=ranges.SEED, default=0, show_default=True, help="Random seed: the same seed, the same sheet.")
@click.option("--labels", "labels_dir", type=_DIR, metavar="DIR", help="Label set for item labels and descriptions.")
@click.option("--truth", type=_PATH, metavar="T.jsonl", help="Items the files already depict, shown to raters.")
@click.option("--out", "out_path", default="-", show_default=True,
              type=click.Path(dir_okay=False, allow_dash=True), help="CSV file to write; - is standard output.")
def human_eval_export(predictions: Path, sample: int, top: int, seed: int, labels_dir: Optional[Path],
                      truth: Optional[Path], out_path: str) -> None:
    """Write a rating sheet: one row per (file, rank, item) with an empty rating column.

    Give each rater a copy; they fill rating with CC, TG, OR, CI or IDK.
    """
    from wikivel_bot.evaluation import build_sheet, read_records, write_sheet

    rankings = {file: record.items for file, record in read_records(predictions).items()}
    known = {file: record.items for file, record in read_records(truth).items()} if truth else None
    label_set: Any = None
    if labels_dir is not None:
        from wikivel_bot.labels import load_label_set

        label_set = load_label_set(labels_dir)
    rows = build_sheet(rankings, sample=sample, top=top, seed=seed, label_set=label_set, truth=known)
    if out_path == "-":
        write_sheet(rows, sys.stdout)
    else:
        try:
            with open(out_path, "w", encoding="utf-8", newline="") as handle:
                write_sheet(rows, handle)
        except OSError as exc:
            raise UsageError(f"cannot write {out_path}: {exc.strerror or exc}") from None
    files = len({row.file for row in rows})
    click.echo(f"{len(rows)} predictions of {files} files to rate"
               + ("" if out_path == "-" else f" written to {out_path}"), err=True)


@human_eval.command("score")
@click.argument("sheets", nargs=-1, required=True, type=_PATH, metavar="SHEET.csv...")
@click.option("--k", "ks_text", default="1,5,10", show_default=True, metavar="K,K,...",
              help="Rank cut-offs, comma separated.")
@click.option("--format", "fmt", type=click.Choice(_FORMATS), default="markdown", show_default=True,
              help="markdown: a table like the paper's Table 5; html: a standalone page; json: counts and shares.")
@click.option("--json", "as_json", is_flag=True, help="Same as --format json.")
@click.option("--out", "out_path", default="-", show_default=True,
              type=click.Path(dir_okay=False, allow_dash=True), help="Output file; - is standard output.")
def human_eval_score(sheets: Sequence[Path], ks_text: str, fmt: str, as_json: bool, out_path: str) -> None:
    """Score filled rating sheets, one per rater, that rate the same rows: the share of each
    rating for ranks <= k and Fleiss' kappa. Every bad or missing rating is listed with its
    sheet and line, and nothing is scored until all are fixed.
    """
    from wikivel_bot.evaluation import SheetError, html_page, read_sheets, summarize

    try:
        rated = read_sheets(list(sheets))
    except SheetError as exc:
        problems: List[str] = exc.problems
        for problem in problems:
            click.echo(problem, err=True)
        raise
    summary = summarize(rated, parse_ks(ks_text))
    fmt = "json" if as_json else fmt
    if fmt == "json":
        text = json.dumps(summary.to_dict(), indent=2) + "\n"
    elif fmt == "html":
        text = html_page([summary.table()], title="wikivel-bot human evaluation")
    else:
        text = summary.table().markdown()
    _write(text, out_path)
