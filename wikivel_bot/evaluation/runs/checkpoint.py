"""``wikivel-bot evaluate --checkpoint``: a trained linker and the baselines on one split.

The checkpoint is self-describing (``linker/checkpoint.py``): the linker variant, the open_clip
model and weights tag, the label-set hash and — for custom model configs such as the tiny test
model — the model config itself, so nothing but the checkpoint, the dataset and its images is
needed. Every model runs through the bot's own code path (``build_ready_linker``, ``attach``,
``search``: images decoded and encoded afresh, not the training cache), ranks the whole label
set, and is scored with ``evaluation.score_rankings`` at k = 1, 5, 10, 20, 50, 100 and hops
0-3. The baselines (zero-shot on the same backbone, random-freq, top-k) see the same files.
Files of the split without a usable image are left out for every model alike, and counted.
"""

from __future__ import annotations

import dataclasses
import json
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

from wikivel_bot.config import LinkerSettings
from wikivel_bot.errors import FileUnavailable, UsageError
from wikivel_bot.evaluation.scoring import REPORT_KS, EvaluationReport, score_rankings
from wikivel_bot.train.data.dataset import image_store, load_dataset, open_labels

BASELINES = ("zero-shot", "random-freq", "top-k")
ALL_HOPS = (0, 1, 2, 3)
# Test images decoded at once and handed to every linker.
CHUNK = 256


@dataclass
class ModelResult:
    """One model's scores on the split.

    :param name: registry name (``naive-mlp``, ``top-k``...).
    :param version: the linker's version string (backbone, weights, checkpoint digest).
    :param report: the scores per hop level.
    :param trained: the checkpoint's model (as opposed to a baseline).
    :param warnings: the linker's own warnings (random weights, ...).
    """

    name: str
    version: str
    report: EvaluationReport
    trained: bool = False
    warnings: Tuple[str, ...] = ()


@dataclass
class EvaluationRun:
    """Everything a report needs: the models' scores and what they were measured on."""

    checkpoint: str
    checkpoint_info: Dict[str, Any]
    data: str
    split: str
    card: Dict[str, Any]
    results: List[ModelResult]
    files: int
    files_without_image: int
    ks: Tuple[int, ...]
    hops: Tuple[int, ...]
    device: str
    notes: List[str] = field(default_factory=list)


def register_checkpoint_model(info: Dict[str, Any], extra: Dict[str, Any]) -> None:
    """Make a checkpoint's custom open_clip model known to open_clip (from its stored config)."""
    import open_clip

    name = str(info.get("model", ""))
    config = extra.get("open_clip_config")
    if not name or open_clip.get_model_config(name) is not None or not config:
        return
    directory = Path(tempfile.mkdtemp(prefix="wikivel-model-"))
    (directory / f"{name}.json").write_text(json.dumps(config), encoding="utf-8")
    open_clip.add_model_config(directory / f"{name}.json")


def settings_for(checkpoint: Any, *, weights: str = "", device: str = "auto", cache_dir: str = "cache",
                 batch_size: int = 64) -> LinkerSettings:
    """LinkerSettings that rebuild the checkpoint's linker (its backbone, its weights tag).

    :param checkpoint: a loaded ``linker.checkpoint.Checkpoint``.
    :param weights: a local weights file for offline machines ('' = the checkpoint's tag).
    """
    info = checkpoint.open_clip
    if info.get("random_weights"):
        weights = "random"
    return LinkerSettings(name=checkpoint.linker, model=str(info["model"]), pretrained=str(info.get("pretrained", "")),
                          weights=weights, checkpoint=checkpoint.path, device=device, cache_dir=cache_dir,
                          batch_size=batch_size)


def evaluate_checkpoint(
    checkpoint_path: Path,
    data: Path,
    *,
    split: str = "test",
    labels: str = "",
    images: str = "",
    weights: str = "",
    device: str = "auto",
    cache_dir: str = "cache",
    baselines: Sequence[str] = BASELINES,
    ks: Sequence[int] = REPORT_KS,
    hops: Sequence[int] = ALL_HOPS,
    limit: Optional[int] = None,
    progress: bool = False,
) -> EvaluationRun:
    """Score the checkpoint's linker and the baselines on ``split`` of the dataset.

    :param checkpoint_path: ``best.pt`` of a training run.
    :param data: the dataset directory.
    :param split: ``test`` (or ``validation``).
    :param labels: label-set directory ('' = the dataset's).
    :param images: image directory ('' = ``<data>/images``).
    :param weights: local weights file for the backbone ('' = the checkpoint's tag).
    :param device: auto, cpu, cuda...
    :param cache_dir: label index cache.
    :param baselines: baseline linkers to run beside it.
    :param ks: cut-offs; :param hops: hop levels.
    :param limit: score only the first ``limit`` files of the split (quick looks).
    :param progress: progress bars.
    :raises UsageError: unknown baseline, missing images, a label set that does not fit.
    :raises LinkerError: an unreadable checkpoint or backbone problems.
    """
    from tqdm import tqdm

    from wikivel_bot.linker.checkpoint import check_labelset, load_checkpoint

    unknown = [b for b in baselines if b not in BASELINES]
    if unknown:
        raise UsageError(f"unknown baseline(s) {', '.join(unknown)} (known: {', '.join(BASELINES)})")
    checkpoint = load_checkpoint(checkpoint_path)
    dataset = load_dataset(Path(data))
    label_set = open_labels(dataset, labels)
    check_labelset(checkpoint, label_set.content_hash)
    register_checkpoint_model(dict(checkpoint.open_clip), dict(checkpoint.extra))
    settings = settings_for(checkpoint, weights=weights, device=device, cache_dir=cache_dir)
    store = image_store(dataset, images)
    # Fusion's Wikidata side reads item images from the same store training read them from.
    linkers = [(built_linker(settings, item_image_loader(store)), True)]
    for name in baselines:
        baseline = built_linker(dataclasses.replace(settings, name=name, checkpoint=""))
        if hasattr(baseline, "set_frequencies"):
            # §4.4: the baselines draw by frequency in the train split, after promotion.
            baseline.set_frequencies(dataset.train_counts(), f"train split of {dataset.path.name}, after promotion")
        linkers.append((baseline, False))
    for linker, _ in linkers:
        linker.attach(label_set, cache_dir, progress=progress)
    rows = dataset.split_rows(split).tolist()
    if limit is not None:
        rows = rows[:limit]
    items = dataset.items()
    k = min(max(ks), len(label_set.qids))
    rankings: List[List[Tuple[str, List[str]]]] = [[] for _ in linkers]
    truth: Dict[str, List[str]] = {}
    missing = 0
    bar = tqdm(total=len(rows), desc=f"evaluate {split}", unit="file", disable=not progress)
    for start in range(0, len(rows), CHUNK):
        files = _load(dataset, store, rows[start:start + CHUNK], side=_side(linkers[0][0]))
        missing += len(rows[start:start + CHUNK]) - len(files)
        for row, _, _ in files:
            truth[str(dataset.page_ids[row])] = items[row]
        for index, (linker, _) in enumerate(linkers):
            queries = [_query(linker, dataset, row, image) for row, image, _ in files]
            for (row, _, _), hits in zip(files, _search(linker, queries, k)):
                rankings[index].append((str(dataset.page_ids[row]), [label_set.qids[i] for i, _ in hits]))
        bar.update(len(rows[start:start + CHUNK]))
    bar.close()
    if not truth:
        raise UsageError(f"no file of the {split} split has a usable image in the image store")
    results = []
    for (linker, trained), ranked in zip(linkers, rankings):
        report = score_rankings(ranked, truth, ks=ks, hops=hops, ancestors_of=label_set.ancestors)
        report.sources = {"split": split, "data": str(data)}
        description = linker.description
        results.append(ModelResult(description.name, description.version, report, trained, tuple(description.warnings)))
    return EvaluationRun(
        checkpoint=str(checkpoint_path), checkpoint_info=_checkpoint_info(checkpoint), data=str(data), split=split,
        card=dataset.card, results=results, files=len(truth), files_without_image=missing, ks=tuple(ks),
        hops=tuple(hops), device=linkers[0][0].description.device,
    )


def built_linker(settings: LinkerSettings, loader: Any = None, cascade: Any = None) -> Any:
    """A linker from the bot's one builder (``build_ready_linker``, not attached): the
    evaluations rank with it as the bot does, without its ranking rules.

    :param loader: item images (an image store's, :func:`item_image_loader`).
    :param cascade: ``CascadeSettings`` (defaults when None).
    """
    from wikivel_bot.config import Settings
    from wikivel_bot.linker import build_ready_linker

    full = dataclasses.replace(Settings(), linker=settings, **({"cascade": cascade} if cascade is not None else {}))
    return build_ready_linker(full, item_images=(lambda: loader) if loader is not None else None).linker


def item_image_loader(store: Any) -> Any:
    """An ``ItemImageLoader`` over an image store (P18 names -> bytes of those it has)."""
    def load(names: Sequence[str]) -> Dict[str, bytes]:
        found = {}
        for name in names:
            data = store.get_name(name)
            if data:
                found[name] = data
        return found

    load.cache_id = f"train-store:{store.identity}"  # type: ignore[attr-defined]
    return load


def _side(linker: Any) -> Optional[int]:
    backbone = getattr(linker, "backbone", None)
    return backbone.image_size if backbone is not None else None


def _load(dataset: Any, store: Any, rows: Sequence[int], side: Optional[int]) -> List[Tuple[int, Any, str]]:
    """(manifest row, decoded image, title) of the rows whose image can be read."""
    from concurrent.futures import ThreadPoolExecutor

    from wikivel_bot.linker.backbone.images import decode_image

    titles = dataset.titles

    def one(row: int) -> Any:
        data = store.get(int(dataset.page_ids[row]), titles[row])
        if not data:
            return None
        try:
            return decode_image(data, min_side=side)
        except FileUnavailable:
            return None

    with ThreadPoolExecutor(max_workers=4) as pool:
        decoded = list(pool.map(one, rows))
    return [(row, image, titles[row]) for row, image in zip(rows, decoded) if image is not None]


def _query(linker: Any, dataset: Any, row: int, image: Any) -> Any:
    from wikivel_bot.linker.base import Query
    from wikivel_bot.linker.texts import file_text
    from wikivel_bot.types import MediaFile

    table = dataset.table
    media = MediaFile(page_id=int(dataset.page_ids[row]), title=dataset.titles[row],
                      description=table.column("description")[row].as_py() or "",
                      categories=tuple(table.column("categories")[row].as_py() or ()))
    # The same per-file seed as link_files: random-freq samples the same items on a rerun.
    return Query(media.title, image, file_text(media, linker.query_text_fields), media.page_id)


def _search(linker: Any, queries: List[Any], k: int) -> List[List[Tuple[int, float]]]:
    out: List[List[Tuple[int, float]]] = []
    size = max(1, linker.batch_size)
    for start in range(0, len(queries), size):
        out.extend(linker.search(queries[start:start + size], k))
    return out


def _checkpoint_info(checkpoint: Any) -> Dict[str, Any]:
    extra = dict(checkpoint.extra)
    return {
        "linker": checkpoint.linker,
        "digest": checkpoint.digest,
        "created": checkpoint.created,
        "open_clip": dict(checkpoint.open_clip),
        "labelset_hash": checkpoint.labelset_hash,
        "train": extra.get("train", {}),
        "validation": extra.get("validation", {}),
        "step": extra.get("step"),
        "epoch": extra.get("epoch"),
        "data": extra.get("data", {}),
        "device": extra.get("device", ""),
    }
