"""The cascade beside the single-stage linkers on one split, and its verifier's calibration.

Every model runs through the bot's own code path (``build_ready_linker``, ``attach``, ``search``
/ ``search_details``; images decoded and encoded afresh), so the figures are what
``suggest`` would rank. Ranking metrics: R@1/5/10, DivR@10, mAP@10, nDCG@5 (hop 0). The
verifier is judged on every (file, candidate) pair of the cascade's lists on the split — files
it was *not* calibrated on (calibration uses the validation split): accuracy, precision,
recall and F1 at P ≥ 0.5, ROC-AUC, expected calibration error and the reliability diagram.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

from wikivel_bot.config import CascadeSettings, LinkerSettings
from wikivel_bot.core.verification import ReliabilityBin, reliability, verification_metrics
from wikivel_bot.errors import FileUnavailable, UsageError
from wikivel_bot.evaluation.scoring import score_rankings
from wikivel_bot.train.data.dataset import image_store, load_dataset, open_labels

METRICS = ("R@1", "R@5", "R@10", "DivR@10", "mAP@10", "nDCG@5")
CHUNK = 128
TOP = 5


@dataclass
class CascadeComparison:
    """Scores per model, the verifier's metrics and reliability bins, and what was measured."""

    rows: List[Tuple[str, str, Dict[str, float]]]
    verifier: Dict[str, float]
    bins: List[ReliabilityBin]
    calibration: str
    files: int
    split: str
    synthetic: bool
    random_weights: bool
    notes: List[str] = field(default_factory=list)


def _media(dataset: Any, row: int) -> Any:
    from wikivel_bot.types import MediaFile

    table = dataset.table
    return MediaFile(page_id=int(dataset.page_ids[row]), title=dataset.titles[row],
                     description=table.column("description")[row].as_py() or "",
                     categories=tuple(table.column("categories")[row].as_py() or ()))


def compare_cascade(
    cascade_checkpoint: Path, data: Path, *, naive: Optional[Path] = None, fusion: Optional[Path] = None,
    split: str = "test", weights: str = "", device: str = "cpu", cache_dir: str = "cache",
    cascade: Optional[CascadeSettings] = None, limit: Optional[int] = None, precision: str = "auto",
) -> CascadeComparison:
    """Score zero-shot, naive-mlp, fusion (when given) and the cascade on ``split``.

    :param cascade_checkpoint: ``best.pt`` of ``train --variant cascade``.
    :param data: the dataset directory.
    :param naive: a naive-mlp checkpoint (default: the first stage embedded in the cascade checkpoint).
    :param fusion: a fusion checkpoint (its row is left out when None).
    :param precision: ``linker.precision`` of every model (``auto``: what the bot would run).
    :raises UsageError: no file of the split has an image.
    """
    from wikivel_bot.linker.base import Query
    from wikivel_bot.linker.cascade.checkpoint import load_cascade_checkpoint
    from wikivel_bot.linker.backbone.images import decode_image
    from wikivel_bot.linker.texts import file_text
    from wikivel_bot.evaluation.runs.checkpoint import built_linker, item_image_loader, register_checkpoint_model

    checkpoint = load_cascade_checkpoint(cascade_checkpoint)
    register_checkpoint_model(dict(checkpoint.open_clip), dict(checkpoint.extra))
    info = checkpoint.open_clip
    settings = LinkerSettings(name="cascade", model=str(info["model"]), pretrained=str(info.get("pretrained", "")),
                              weights="random" if info.get("random_weights") else weights, device=device,
                              cache_dir=cache_dir, batch_size=64, precision=precision)
    dataset = load_dataset(Path(data))
    label_set = open_labels(dataset)
    store = image_store(dataset)
    loader = item_image_loader(store)
    cascade = cascade or CascadeSettings(candidates=checkpoint.candidates, text_tokens=checkpoint.text_tokens)
    plan: List[Tuple[str, Optional[Path]]] = [("zero-shot", None)]
    if naive is None and checkpoint.first_stage:
        # The first stage's own checkpoint travels inside the cascade's: score it too.
        import tempfile

        import torch

        naive = Path(tempfile.mkdtemp(prefix="wikivel-first-stage-")) / "first-stage.pt"
        torch.save(dict(checkpoint.first_stage), naive)
    if naive is not None:
        plan.append((checkpoint.first_stage_linker or "naive-mlp", naive))
    if fusion is not None:
        plan.append(("fusion", fusion))
    plan.append(("cascade", Path(cascade_checkpoint)))
    linkers = []
    for name, path in plan:
        linker = built_linker(dataclasses.replace(settings, name=name, checkpoint=str(path or "")), loader, cascade)
        linker.attach(label_set, cache_dir)
        linkers.append(linker)
    rows = dataset.split_rows(split).tolist()[:limit]
    items = dataset.items()
    side = getattr(linkers[-1], "backbone").image_size
    rankings: List[List[Tuple[str, List[str]]]] = [[] for _ in linkers]
    truth: Dict[str, List[str]] = {}
    probabilities: List[float] = []
    labels: List[bool] = []
    # The verifier where it matters most: the pairs a reviewer would see first.
    top_p: List[float] = []
    top_y: List[bool] = []
    k = max(10, cascade.candidates)
    for start in range(0, len(rows), CHUNK):
        files = []
        for row in rows[start:start + CHUNK]:
            raw = store.get(int(dataset.page_ids[row]), dataset.titles[row])
            if not raw:
                continue
            try:
                files.append((row, decode_image(raw, min_side=side)))
            except FileUnavailable:
                continue
        for row, _ in files:
            truth[str(dataset.page_ids[row])] = items[row]
        for index, linker in enumerate(linkers):
            text = getattr(linker, "query_text", None)
            queries = [Query(dataset.titles[row], image,
                             text(_media(dataset, row)) if text else file_text(_media(dataset, row),
                                                                                 linker.query_text_fields), row)
                       for row, image in files]
            if hasattr(linker, "search_details"):
                found = linker.search_details(queries, k)
                for (row, _), hits in zip(files, found):
                    wanted = set(items[row])
                    for rank, h in enumerate(hits, start=1):
                        if h.probability is not None:
                            probabilities.append(h.probability)
                            labels.append(label_set.qids[h.position] in wanted)
                            if rank <= TOP:
                                top_p.append(probabilities[-1])
                                top_y.append(labels[-1])
                hits_lists = [[h.position for h in hits] for hits in found]
            else:
                hits_lists = [[i for i, _ in hits] for hits in linker.search(queries, k)]
            for (row, _), positions in zip(files, hits_lists):
                rankings[index].append((str(dataset.page_ids[row]), [label_set.qids[i] for i in positions]))
    if not truth:
        raise UsageError(f"no file of the {split} split has a usable image in the image store")
    out_rows = []
    for linker, ranked in zip(linkers, rankings):
        report = score_rankings(ranked, truth, ks=(1, 5, 10), hops=(0,))
        out_rows.append((linker.description.name, linker.description.version,
                         {m: float(report.scores[0][m]) for m in METRICS}))
    verifier = verification_metrics(probabilities, labels) if probabilities else {}
    if top_p:
        top = verification_metrics(top_p, top_y)
        verifier.update({f"top{TOP}_{key}": value for key, value in top.items()})
    notes = []
    if dataset.card.get("synthetic"):
        notes.append("synthetic dataset: nothing here is Commons data")
    if info.get("random_weights"):
        notes.append("random-init backbone: the figures measure the heads and the pair model, not CLIP")
    return CascadeComparison(
        rows=out_rows, verifier=verifier, bins=reliability(probabilities, labels) if probabilities else [],
        calibration=checkpoint.calibration.method if checkpoint.calibration else "none", files=len(truth),
        split=split, synthetic=bool(dataset.card.get("synthetic")), random_weights=bool(info.get("random_weights")),
        notes=notes,
    )


def comparison_markdown(result: CascadeComparison) -> str:
    """The comparison and the verifier as Markdown tables (they say when the data is synthetic)."""
    kind = "SYNTHETIC data, " if result.synthetic else ""
    kind += "random-init backbone, " if result.random_weights else ""
    lines = [f"Ranking on the {result.split} split ({kind}{result.files} files; hop 0):", "",
             "| model | " + " | ".join(METRICS) + " |", "| --- |" + " --- |" * len(METRICS)]
    for name, _, metrics in result.rows:
        lines.append(f"| {name} | " + " | ".join(f"{100 * metrics[m]:.1f}" for m in METRICS) + " |")
    if result.verifier:
        v = result.verifier
        lines += ["", f"Verifier ({result.calibration} calibration fitted on the validation split; measured on "
                      f"{int(v['pairs'])} (file, candidate) pairs of the {result.split} split, {kind.rstrip(', ')}):", "",
                  "| accuracy | precision | recall | F1 | ROC-AUC | ECE | match rate | pairs |",
                  "| --- | --- | --- | --- | --- | --- | --- | --- |",
                  f"| {v['accuracy']:.3f} | {v['precision']:.3f} | {v['recall']:.3f} | {v['f1']:.3f} | {v['roc_auc']:.3f} | "
                  f"{v['ece']:.4f} | {v['base_rate']:.3f} | all {int(v['pairs'])} |"]
        if f"top{TOP}_pairs" in v:
            lines.append(f"| {v[f'top{TOP}_accuracy']:.3f} | {v[f'top{TOP}_precision']:.3f} | {v[f'top{TOP}_recall']:.3f} | "
                         f"{v[f'top{TOP}_f1']:.3f} | {v[f'top{TOP}_roc_auc']:.3f} | {v[f'top{TOP}_ece']:.4f} | "
                         f"{v[f'top{TOP}_base_rate']:.3f} | (only the top {TOP} of each list: "
                         f"{int(v[f'top{TOP}_pairs'])} pairs)")
        lines += ["", "Reliability diagram, all pairs (bins with pairs):", "",
                  "| predicted | pairs | mean P | observed match rate |", "| --- | --- | --- | --- |"]
        for b in result.bins:
            if b.count:
                lines.append(f"| {b.low:.1f}-{b.high:.1f} | {b.count} | {b.mean_probability:.3f} | {b.accuracy:.3f} |")
    lines += [""] + [f"note: {n}" for n in result.notes]
    return "\n".join(lines) + "\n"


def write_reliability_plot(result: CascadeComparison, path: Path) -> Path:
    """The reliability diagram as a PNG (observed match rate against predicted probability)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(4, 4))
    used = [b for b in result.bins if b.count]
    ax.plot([0, 1], [0, 1], linestyle="--", color="grey", label="perfect")
    ax.plot([b.mean_probability for b in used], [b.accuracy for b in used], marker="o", label="verifier")
    ax.set_xlabel("predicted P(match)")
    ax.set_ylabel("observed match rate")
    title = "Reliability" + (" (synthetic data)" if result.synthetic else "")
    ax.set_title(title)
    ax.legend()
    fig.tight_layout()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path
