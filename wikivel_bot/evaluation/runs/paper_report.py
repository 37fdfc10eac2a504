"""The evaluation report: the paper's Table 4 layout with its numbers beside ours, plots, and
a filled model card.

Written to a directory: ``report.md``, ``report.html`` (standalone: figures inlined),
``results.json`` (every metric as a fraction), ``model-card.md`` (``docs/model-card.md``
filled in) and the figures as PNG (matplotlib, from the ``train`` extra; without it the
figures are skipped and the report says so). Every table states what our numbers were
measured on — synthetic data and a random-init backbone are said in words, next to them.
"""

from __future__ import annotations

import base64
import json
import re
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from wikivel_bot.evaluation.report import Table, evaluation_table, html_page
from wikivel_bot.evaluation.report import percent
from wikivel_bot.train.data.dataset import card_tables
from wikivel_bot.evaluation.runs.checkpoint import EvaluationRun, ModelResult

TABLE4_COLUMNS = tuple(f"{m}@{k}" for m in ("R", "DivR", "mAP") for k in (1, 5, 10))
# The paper's Table 4 (test split, zero hops, %): 100,000 Commons test images, f = 10
# (18,522 items), ViT-B/32 CLIP; batch size 1,024 unless the name says 256.
PAPER_TABLE4: Dict[str, Tuple[float, ...]] = {
    "Zero-shot": (4.7, 11.5, 15.9, 4.7, 7.5, 10.3, 4.7, 4.7, 5.1),
    "Random baseline": (2.1, 9.6, 17.2, 2.1, 6.5, 11.5, 2.1, 3.1, 3.7),
    "Top-k baseline": (12.4, 29.8, 40.8, 12.4, 20.5, 29.8, 12.4, 14.3, 15.9),
    "MLP Naive CLIP": (16.2, 40.5, 51.8, 16.2, 27.5, 37.2, 16.2, 17.1, 18.7),
    "TE Naive CLIP BS 256": (20.6, 37.5, 45.0, 20.6, 26.0, 31.8, 20.6, 19.0, 20.0),
    "MLP Naive CLIP BS 256": (14.2, 38.8, 49.8, 14.2, 26.3, 35.6, 14.2, 15.7, 17.3),
    "CLIP Fusion": (36.4, 62.4, 71.8, 36.4, 45.5, 56.3, 36.4, 32.3, 34.3),
}
PAPER_NAME = {"zero-shot": "Zero-shot", "random-freq": "Random baseline", "top-k": "Top-k baseline",
              "naive-mlp": "MLP Naive CLIP", "naive-te": "TE Naive CLIP BS 256", "fusion": "CLIP Fusion"}
PAPER_SETUP = ("paper (Bielefeld et al. 2024, Table 4): 100,000 Commons test images, f = 10 label set "
               "(18,522 items), pretrained ViT-B/32 CLIP, trained on 800,000 images")
TEMPLATE = Path(__file__).resolve().parents[3] / "docs" / "model-card.md"
FALLBACK_TEMPLATE = """# Model card: {{model}}

{{measured_on}}

## Results ({{split}} split, hops 0)

{{results_table}}

## Training

{{training}}
"""


def measured_on(run: EvaluationRun) -> str:
    """One paragraph saying what our numbers were measured on, in plain words."""
    card = run.card
    info = run.checkpoint_info
    clip = info.get("open_clip", {})
    data_kind = ("synthetic data (generated shapes; no Commons files)" if card.get("synthetic")
                 else "a dataset built from the Commons dumps")
    backbone = (f"open_clip {clip.get('model')} with RANDOM weights (no pretraining: a random-init backbone)"
                if clip.get("random_weights") else f"open_clip {clip.get('model')} / {clip.get('pretrained') or clip.get('weights')}")
    labels = card.get("labels", {})
    return (f"Ours: measured on {run.files:,} files of the {run.split} split of {data_kind}, label set of "
            f"{labels.get('items', 0):,} items (f = {labels.get('min_freq', 0)}), backbone {backbone}, on {run.device}. "
            + (f"{run.files_without_image:,} files of the split had no usable image and were left out for every model. "
               if run.files_without_image else "")
            + f"The paper's numbers are from a different setup: {PAPER_SETUP}. They are shown for the layout and as "
              "the target, not as a comparison on equal data.")


def source_label(run: EvaluationRun) -> str:
    """Short tag for our rows: ``ours (synthetic, random-init)`` etc."""
    tags = []
    if run.card.get("synthetic"):
        tags.append("synthetic")
    if run.checkpoint_info.get("open_clip", {}).get("random_weights"):
        tags.append("random-init")
    return "ours" + (f" ({', '.join(tags)})" if tags else "")


def table4(run: EvaluationRun) -> Table:
    """Table 4's layout at hops 0: our models, then the paper's rows."""
    rows: List[List[str]] = []
    ours = source_label(run)
    for result in _ordered(run.results):
        scores = result.report.scores[0]
        rows.append([result.name, ours] + [percent(scores.get(c)) for c in TABLE4_COLUMNS])
    for name, values in PAPER_TABLE4.items():
        rows.append([name, "paper"] + [f"{v:.1f}" for v in values])
    notes = [measured_on(run)]
    return Table(title=f"Comparison with the paper's Table 4 ({run.split} split, zero hops, %)",
                 headers=["model", "source", *TABLE4_COLUMNS], rows=rows, notes=notes)


def deeper_table(run: EvaluationRun) -> Table:
    """Ours at the larger cut-offs the paper quotes in §5.1, with MRR and nDCG@5."""
    columns = [f"R@{k}" for k in run.ks if k > 10] + [f"DivR@{k}" for k in run.ks if k > 10] + ["nDCG@5", "MRR"]
    rows = [[r.name] + [percent(r.report.scores[0].get(c)) for c in columns] for r in _ordered(run.results)]
    return Table(title=f"Larger cut-offs ({source_label(run)}, zero hops, %)", headers=["model", *columns], rows=rows,
                 notes=[f"{run.files:,} files scored"])


def hop_tables(run: EvaluationRun) -> List[Table]:
    """One row per hop level for every model (``evaluation.evaluation_table``)."""
    columns = [f"{m}@{k}" for m in ("R", "DivR", "mAP") for k in (1, 5, 10)]
    return [evaluation_table(r.report, columns, title=f"{r.name}: hop credit 0-3 ({source_label(run)}, %)")
            for r in _ordered(run.results)]


def _ordered(results: Sequence[ModelResult]) -> List[ModelResult]:
    return sorted(results, key=lambda r: (not r.trained, r.name))


def figures(run: EvaluationRun, out_dir: Path, metrics_log: Optional[Path] = None) -> Tuple[List[Path], List[str]]:
    """Recall@k curves, metrics over hops and (when the run's log is found) training curves.

    :returns: (PNG paths written, notes about figures that could not be drawn).
    """
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return [], ["figures skipped: matplotlib is not installed (pip install 'wikivel-bot[train]')"]
    written: List[Path] = []
    tag = source_label(run)
    fig, ax = plt.subplots(figsize=(6, 4))
    for result in _ordered(run.results):
        ks = list(run.ks)
        ax.plot(ks, [100 * result.report.scores[0][f"R@{k}"] for k in ks], marker="o", label=f"{result.name} ({tag})")
        paper = PAPER_TABLE4.get(PAPER_NAME.get(result.name, ""))
        if paper:
            ax.plot([1, 5, 10], paper[:3], linestyle="--", marker="x", alpha=0.6, label=f"{result.name} (paper)")
    ax.set_xscale("log")
    ax.set_xlabel("k")
    ax.set_ylabel("Recall@k (%)")
    ax.set_title(f"Recall@k, {run.split} split, zero hops")
    ax.legend(fontsize=7)
    written.append(_save(fig, out_dir / "recall_at_k.png"))
    fig, ax = plt.subplots(figsize=(6, 4))
    for result in _ordered(run.results):
        levels = list(run.hops)
        ax.plot(levels, [100 * result.report.scores[h]["R@10"] for h in levels], marker="o", label=result.name)
    ax.set_xlabel("hops of credit")
    ax.set_ylabel("R@10 (%)")
    ax.set_xticks(list(run.hops))
    ax.set_title(f"R@10 with hop credit ({tag})")
    ax.legend(fontsize=7)
    written.append(_save(fig, out_dir / "hops.png"))
    if metrics_log is not None and metrics_log.is_file():
        written.append(_training_figure(plt, metrics_log, out_dir / "training.png"))
    return written, []


def _training_figure(plt: Any, log: Path, target: Path) -> Path:
    steps, losses, val_steps, val_r10 = [], [], [], []
    for line in log.read_text(encoding="utf-8").splitlines():
        entry = json.loads(line)
        if entry.get("kind") == "train":
            steps.append(entry["step"])
            losses.append(entry["loss"])
        elif entry.get("kind") == "validation" and "R@10" in entry:
            val_steps.append(entry["step"])
            val_r10.append(100 * entry["R@10"])
    fig, ax = plt.subplots(figsize=(6, 4))
    ax.plot(steps, losses, linewidth=0.8, label="train loss")
    ax.set_xlabel("step")
    ax.set_ylabel("loss")
    twin = ax.twinx()
    twin.plot(val_steps, val_r10, color="tab:red", marker="o", label="validation R@10 (%)")
    twin.set_ylabel("validation R@10 (%)")
    ax.set_title("training")
    return _save(fig, target)


def _save(fig: Any, path: Path) -> Path:
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    import matplotlib.pyplot as plt

    plt.close(fig)
    return path


def results_json(run: EvaluationRun) -> Dict[str, Any]:
    """Plain data: every score as a fraction, per model and hop level, with provenance."""
    return {
        "checkpoint": run.checkpoint, "checkpoint_info": run.checkpoint_info, "data": run.data, "split": run.split,
        "synthetic": bool(run.card.get("synthetic")), "files": run.files,
        "files_without_image": run.files_without_image, "device": run.device, "measured_on": measured_on(run),
        "models": [{"name": r.name, "version": r.version, "trained": r.trained, "warnings": list(r.warnings),
                    **r.report.to_dict()} for r in run.results],
        "paper_table4": {name: dict(zip(TABLE4_COLUMNS, values)) for name, values in PAPER_TABLE4.items()},
    }


def fill_template(template: str, values: Mapping[str, str]) -> str:
    """Drop HTML comments (notes for whoever edits the template), then replace ``{{name}}``
    placeholders; an unknown placeholder is an error (a template and code out of step).

    :raises KeyError: naming the placeholder.
    """
    def one(match: "re.Match[str]") -> str:
        return values[match.group(1).strip()]

    text = re.sub(r"<!--.*?-->\s*", "", template, flags=re.DOTALL)
    return re.sub(r"\{\{\s*([a-z_]+)\s*\}\}", one, text)


def card_values(run: EvaluationRun) -> Dict[str, str]:
    """The model card's placeholders filled from the run."""
    info = run.checkpoint_info
    trained = next((r for r in run.results if r.trained), run.results[0])
    train_cfg = info.get("train", {})
    keys = ("linker", "epochs", "batch_size", "lr", "text_lr", "weight_decay", "loss", "margin", "temperature",
            "target_hops", "hop_weight", "rescale", "val_per_epoch", "patience", "select", "seed")
    training = "\n".join(f"- {k}: {train_cfg[k]}" for k in keys if k in train_cfg)
    training += f"\n- steps: {info.get('step')} (epoch {info.get('epoch')}), device {info.get('device') or 'unknown'}"
    clip = info.get("open_clip", {})
    warnings = sorted({w for r in run.results for w in r.warnings})
    return {
        "model": trained.name,
        "version": trained.version,
        "checkpoint": run.checkpoint,
        "checkpoint_digest": str(info.get("digest", ""))[:16],
        "created": str(info.get("created", "")),
        "backbone": str(clip.get("model", "")),
        "weights": "random (untrained backbone)" if clip.get("random_weights") else str(clip.get("pretrained") or clip.get("weights")),
        "labelset_hash": str(info.get("labelset_hash", ""))[:16],
        "split": run.split,
        "files": f"{run.files:,}",
        "data": run.data,
        "data_kind": "synthetic (generated shapes, not Commons data)" if run.card.get("synthetic") else "Commons dumps",
        "dataset_tables": card_tables(run.card),
        "training": training,
        "measured_on": measured_on(run),
        "results_table": table4(run).markdown(),
        "deeper_table": deeper_table(run).markdown(),
        "hops_table": hop_tables(run)[0].markdown(),
        "warnings": "\n".join(f"- {w}" for w in warnings) or "- none",
        "validation": ", ".join(f"{k} {percent(v) if k != 'val_loss' else round(v, 4)}"
                                for k, v in sorted(info.get("validation", {}).items())),
    }


def write_report(run: EvaluationRun, out_dir: Path, template: Optional[Path] = None) -> Dict[str, Path]:
    """Write report.md, report.html, results.json, model-card.md and the figures.

    :param run: the evaluation.
    :param out_dir: where (created).
    :param template: model-card template (default ``docs/model-card.md``, else a short built-in one).
    :returns: name -> path of what was written.
    """
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    log = Path(run.checkpoint).parent / "metrics.jsonl"
    pngs, figure_notes = figures(run, out_dir, log)
    tables = [table4(run), deeper_table(run), *hop_tables(run)]
    title = f"Wiki-VEL evaluation: {next((r.name for r in run.results if r.trained), '?')} on the {run.split} split"
    markdown = [f"# {title}", "", measured_on(run), ""]
    markdown += [t.markdown() for t in tables]
    markdown += [f"![{p.stem}]({p.name})" for p in pngs] + [f"- {n}" for n in figure_notes]
    written = {"report.md": out_dir / "report.md", "report.html": out_dir / "report.html",
               "results.json": out_dir / "results.json", "model-card.md": out_dir / "model-card.md"}
    written["report.md"].write_text("\n".join(markdown) + "\n", encoding="utf-8")
    images = "".join(f'<figure><img alt="{p.stem}" src="data:image/png;base64,{base64.b64encode(p.read_bytes()).decode()}">'
                     f"<figcaption>{p.stem}</figcaption></figure>\n" for p in pngs)
    page = html_page(tables, title=title)
    written["report.html"].write_text(page.replace("</body>", images + "</body>"), encoding="utf-8")
    written["results.json"].write_text(json.dumps(results_json(run), indent=2) + "\n", encoding="utf-8")
    source = template or TEMPLATE
    text = source.read_text(encoding="utf-8") if source.is_file() else FALLBACK_TEMPLATE
    written["model-card.md"].write_text(fill_template(text, card_values(run)), encoding="utf-8")
    for png in pngs:
        written[png.name] = png
    return written
