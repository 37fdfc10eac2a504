"""The ``--checkpoint`` mode of ``wikivel-bot evaluate``: a trained linker (or cascade) and
the baselines rank a dataset split, laid out like the paper's Table 4.

Called from ``cli/evaluate.py``; torch is imported inside the functions only.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Optional, Sequence

import click

from wikivel_bot.cli.context import CliContext
from wikivel_bot.errors import UsageError


def evaluate_checkpoint_mode(obj: CliContext, *, checkpoint: Path, data: Optional[Path], split: str,
                             labels: Optional[Path], images: Optional[Path], baselines: str, ks: Sequence[int],
                             hops: Optional[Sequence[int]], report_dir: Optional[Path], limit: Optional[int],
                             weights: Optional[str], device: Optional[str], fmt: str) -> str:
    """The ``evaluate --checkpoint`` mode: score it and the baselines, write the report.

    :returns: the text to print (Markdown tables, an HTML page, or JSON).
    """
    from wikivel_bot.evaluation import html_page
    from wikivel_bot.evaluation.runs.checkpoint import ALL_HOPS, evaluate_checkpoint
    from wikivel_bot.evaluation.runs.paper_report import (
        deeper_table,
        results_json,
        table4,
        write_report,
    )

    if data is None:
        raise UsageError("evaluate --checkpoint needs the dataset: give --data DIR")
    from wikivel_bot.linker.cascade.checkpoint import is_cascade_checkpoint

    if is_cascade_checkpoint(checkpoint):
        return _evaluate_cascade(obj, checkpoint, data, split, report_dir, limit, weights, device, fmt)
    linker = obj.settings.linker
    names = tuple(b.strip() for b in baselines.split(",") if b.strip())
    run = evaluate_checkpoint(
        checkpoint, data, split=split, labels=str(labels or ""), images=str(images or ""),
        weights=linker.weights if weights is None else weights, device=device or linker.device,
        cache_dir=linker.cache_dir, baselines=names, ks=ks, hops=hops or ALL_HOPS, limit=limit,
        progress=sys.stderr.isatty(),  # progress bars only on a terminal, as elsewhere
    )
    if report_dir is not None:
        written = write_report(run, report_dir)
        click.echo(f"wrote {', '.join(str(p) for p in written.values())}", err=True)
    if fmt == "json":
        return json.dumps(results_json(run), indent=2) + "\n"
    if fmt == "html":
        return html_page([table4(run), deeper_table(run)], title="wikivel-bot evaluation")
    return table4(run).markdown() + "\n" + deeper_table(run).markdown()


def _evaluate_cascade(obj: CliContext, checkpoint: Path, data: Path, split: str, report_dir: Optional[Path],
                      limit: Optional[int], weights: Optional[str], device: Optional[str], fmt: str) -> str:
    """``evaluate --checkpoint`` for a cascade: zero-shot, its first stage and the cascade, and the verifier."""
    import dataclasses as dc

    from wikivel_bot.evaluation.runs.cascade import compare_cascade, comparison_markdown, write_reliability_plot

    linker = obj.settings.linker
    result = compare_cascade(checkpoint, data, split=split, weights=linker.weights if weights is None else weights,
                             device=device or linker.device, cache_dir=linker.cache_dir, limit=limit)
    text = comparison_markdown(result)
    if report_dir is not None:
        report_dir.mkdir(parents=True, exist_ok=True)
        (report_dir / "cascade.md").write_text(text, encoding="utf-8")
        plot = write_reliability_plot(result, report_dir / "reliability.png")
        click.echo(f"wrote {report_dir / 'cascade.md'}, {plot}", err=True)
    if fmt == "json":
        doc = dc.asdict(result)
        return json.dumps(doc, indent=2) + "\n"
    return text
