"""The model card of a promoted checkpoint: its data, metrics and date.

Written at every promotion to ``NAME/model-card.md`` and, for the model that runs, to
``model-card.md`` at the top of the models directory (a rollback rewrites that one for the
model it brings back). The trained-from-scratch card of ``evaluate --report`` (the
``docs/model-card.md`` template) describes a model's origin; this one says what reviewers'
decisions changed, measured on later decisions.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

from wikivel_bot.learning.metrics import METRICS

CARD = "model-card.md"


def render_card(name: str, report: Mapping[str, Any]) -> str:
    verdict = report.get("verdict", {})
    data = report.get("data", {})
    splits = data.get("splits", {})
    champion, challenger = verdict.get("champion", {}), verdict.get("challenger", {})
    deltas = verdict.get("deltas", {})
    lines = [
        f"# Model card: {name} (learned from reviewers' decisions)",
        "",
        f"- Created: {report.get('created', '?')}; promoted: {report.get('promoted_at', 'not promoted')}"
        + (f" by {report['promoted_by']}" if report.get("promoted_by") else ""),
        f"- Linker: `{report.get('linker', '?')}`; checkpoint sha256 {str(report.get('digest', ''))[:12]}…",
        f"- Started from: {report.get('champion_checkpoint') or 'the untrained heads'}",
        ("- Trained part: none — the running model's weights, recalibrated (Platt) on its own suggestions of "
         "the round's held-out files, because the round's challenger was kept."
         if verdict.get("outcome") == "recalibrated" else
         f"- Trained part: {report.get('trained', 'Naive CLIP heads')} (pairwise loss with rejections as negatives "
         f"and the contrastive or listwise loss on approvals), {report.get('epochs', '?')} epochs; probability "
         "calibrated (Platt) on its own suggestions of held-out files."),
        f"- Operating threshold: score {_num(report.get('operating_threshold'))} (probability "
        f"{verdict.get('threshold', '?')}); it runs with the model, in place of `linker.min_score`.",
        "",
        "## Data",
        "",
        f"Human decisions read: {data.get('decisions', '?')}, kept: {data.get('kept', '?')}; left out: "
        + (", ".join(f"{k} {v}" for k, v in sorted(data.get("dropped", {}).items())) or "none") + ".",
        f"Per reviewer (cap {data.get('reviewer_cap') or 'none'}; excluded: "
        f"{', '.join(data.get('excluded_reviewers', [])) or 'none'}): "
        + ", ".join(f"{k} {v}" for k, v in sorted(data.get("per_reviewer", {}).items())) + ".",
        "",
        "| split | files | approved | rejected | uploaded |",
        "|---|---|---|---|---|",
    ]
    for split in ("train", "calibration", "evaluation"):
        s = splits.get(split, {})
        lines.append(f"| {split} | {s.get('files', 0)} | {s.get('approved', 0)} | {s.get('rejected', 0)} | "
                     f"{' – '.join(s.get('uploaded', []))} |")
    lines += [
        "",
        f"## Metrics on the evaluation files (threshold {verdict.get('threshold', '?')}, "
        f"{verdict.get('files', '?')} files, later uploads than training)",
        "",
        "| metric | running before | this model | change (95% bootstrap interval) |",
        "|---|---|---|---|",
    ]
    for metric in METRICS:
        d = deltas.get(metric, {})
        lines.append(f"| {metric} | {_num(champion.get(metric))} | {_num(challenger.get(metric))} | "
                     f"{_num(d.get('delta'))} [{_num(d.get('low'))}, {_num(d.get('high'))}] |")
    lines += ["", f"Verdict: **{verdict.get('outcome', '?')}** — " + "; ".join(verdict.get("reasons", [])), ""]
    return "\n".join(lines)


def write_cards(models_dir: Path, name: str, report: Mapping[str, Any], *, promoted_at: str = "",
                by: str = "") -> None:
    """Both cards of NAME; ``promoted_at``/``by``: a promotion by hand (``models promote``,
    ``rollback``), whose date the report written at training does not hold."""
    if promoted_at:
        report = {**report, "promoted_at": promoted_at, "promoted_by": by}
    text = render_card(name, report)
    (models_dir / name / CARD).write_text(text, encoding="utf-8")
    (models_dir / CARD).write_text(text, encoding="utf-8")


def _num(value: Any) -> str:
    try:
        return "n/a" if value is None or value != value else f"{float(value):.3f}"
    except (TypeError, ValueError):
        return "n/a"
