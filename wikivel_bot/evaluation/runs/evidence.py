"""Image only, image + evidence and evidence alone on the synthetic evidence set (SYNTHETIC).

The benchmark of Commons' own evidence (``bench/evidence.py``), one function, :func:`run_evidence_bench`:

1. a synthetic evidence set (``train/synthetic/evidence.py``: coloured shapes whose files carry
   category, link and identifier evidence, a controlled share of it misleading, a fifth of the
   leaves outside the label set);
2. naive-mlp, fusion and the cascade trained on its training split as
   ``dataset reproduce-synthetic`` trains its heads (tiny open_clip model, random init, CPU,
   ``loop.train`` and ``cascade.train_cascade``); zero-shot needs no training;
3. for each linker, every file linked through the bot's own path (``build_ready_linker`` and
   ``ReadyLinker.link``), with the set's evidence handed over by :class:`SyntheticResolver`
   where a resolver over Commons would be:

   * **image only** — no evidence; suggestions by the linker's own probability (the
     cascade's verifier) or score;
   * **image + evidence** — the training split linked with evidence, its candidates' records
     (``train.evidence.fit.evidence_records``: the linker's real visual scores) fitted into an
     evidence model (``linker.evidence_model.fit``), and the later splits linked with that
     model set as ``linker.evidence_model``; suggestions by its probability;

4. **evidence alone** — every evidence item proposed, ranked by kind, no image (a rule bot).

Measured on the test split (hop 0; the truth is what each file depicts, items outside the
label set included): R@1, R@10, nDCG@5 (``evaluation.score_rankings``), and precision and
recall at a threshold calibrated on the validation split (``core.calibration.calibrate``: the
lowest threshold reaching the target precision there; when none does, the one with the best
precision there, marked), the share of those suggestions outside the label set, and the share
of the misleading evidence (items the evidence names that the file does not depict) among them.
Nothing here is Commons data, and the backbone is random: every figure is SYNTHETIC.
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import AbstractSet, Any, Dict, List, Mapping, Optional, Sequence, Tuple

from wikivel_bot.core.calibration import apply_threshold, calibrate
from wikivel_bot.core.evidence import KIND_CATEGORY, KIND_CATEGORY_LABEL, KIND_ID, KIND_LINK, Evidence
from wikivel_bot.errors import UsageError
from wikivel_bot.evaluation.scoring import score_rankings
from wikivel_bot.evaluation.runs.reproduce import ReproduceOptions
from wikivel_bot.train.synthetic.evidence import SyntheticEvidence
from wikivel_bot.types import Candidate, MediaFile

LINKERS = ("zero-shot", "naive-mlp", "fusion", "cascade")
IMAGE_ONLY = "image only"
WITH_EVIDENCE = "image + evidence"
EVIDENCE_ALONE = "evidence alone"
COLUMNS = ("R@1", "R@10", "nDCG@5", "precision", "recall", "outside label set", "misleading kept", "threshold")
# Evidence alone ranks an item by how many kinds name it, then by its strongest kind: an
# identifier or a description link names what the file shows; a category may name its
# photographer; an unlinked category only shares a name.
KIND_ORDER = (KIND_ID, KIND_LINK, KIND_CATEGORY, KIND_CATEGORY_LABEL)
CHUNK = 64


@dataclass
class EvidenceBenchOptions:
    """How big and how long (the defaults run in about 3 minutes on 2 cores; docs/benchmarks.md).

    :param files: synthetic files (80 / 10 / 10 % train / validation / test).
    :param seed: of the data, the split and the training.
    :param shares: overrides of ``train.synthetic.evidence.DEFAULT_SHARES`` (``misleading``...).
    :param epochs: naive-mlp and fusion epochs (batch 128, lr 0.01, as ``ReproduceOptions``);
    :param cascade_epochs: the cascade's (batch 32, lr 0.003, as ``bench/cascade_quality.py``).
    :param candidates: the cascade's first-stage candidates K.
    :param top_k: suggestions per file the image proposes (the evidence items come besides).
    :param target: the precision the threshold is calibrated for on the validation split.
    :param l2: the evidence model's penalty.
    :param threads: torch CPU threads. :param precision: ``linker.precision`` of every linker.
    :param linkers: which of :data:`LINKERS` to run (all by default).
    """

    files: int = 1200
    seed: int = 0
    shares: Mapping[str, float] = field(default_factory=dict)
    # reproduce-synthetic's heads (ReproduceOptions) and bench/cascade_quality.py's cascade.
    epochs: int = ReproduceOptions.epochs
    cascade_epochs: int = 10
    candidates: int = 50
    top_k: int = 10
    target: float = 0.9
    l2: float = 1.0
    threads: int = 2
    precision: str = "auto"
    linkers: Tuple[str, ...] = LINKERS
    progress: bool = False


@dataclass
class EvidenceComparison:
    """The table's rows (``linker``, ``mode``, the :data:`COLUMNS`, ``on``: what was thresholded,
    ``reached``: whether the target was reached on validation), and what was measured."""

    rows: List[Dict[str, Any]]
    files: int
    options: EvidenceBenchOptions
    shares: Mapping[str, Any]
    models: Dict[str, Dict[str, Any]] = field(default_factory=dict)
    seconds: Dict[str, float] = field(default_factory=dict)

    def row(self, linker: str, mode: str) -> Dict[str, Any]:
        """The row of ``linker`` (``evidence`` for evidence alone) in ``mode``."""
        return next(r for r in self.rows if r["linker"] == linker and r["mode"] == mode)


class SyntheticResolver:
    """The set's evidence where ``commons.evidence.EvidenceResolver`` would resolve Commons':
    the ready linker asks it for a batch's evidence, and the items outside the label set."""

    def __init__(self, evidence: SyntheticEvidence) -> None:
        self.evidence = evidence
        self.requests = 0  # nothing is asked of a wiki

    def resolve(self, files: Sequence[MediaFile]) -> Tuple[Dict[int, Tuple[Evidence, ...]], Dict[str, Any]]:
        found = {f.page_id: self.evidence.sources.get(f.page_id, ()) for f in files}
        named = {ev.qid for sources in found.values() for ev in sources}
        return found, {q: self.evidence.items[q] for q in named if q in self.evidence.items}


def run_evidence_bench(out: Path, options: EvidenceBenchOptions = EvidenceBenchOptions()) -> EvidenceComparison:
    """Make the set into ``out/syn``, train into ``out/runs``, and compare (module docstring)."""
    from wikivel_bot.train.synthetic.evidence import make_evidence_synthetic

    unknown = sorted(set(options.linkers) - set(LINKERS))
    if unknown:
        raise UsageError(f"unknown linker {unknown[0]!r} (known: {', '.join(LINKERS)})")
    out = Path(out)
    started = time.perf_counter()
    make_evidence_synthetic(out / "syn", options.files, options.seed, force=True, shares=dict(options.shares))
    checkpoints = train_linkers(out / "syn", out, options)
    trained = time.perf_counter() - started
    result = compare_evidence(out / "syn", checkpoints, out, options)
    result.seconds = {"training": trained, "total": time.perf_counter() - started}
    return result


def train_linkers(data: Path, out: Path, options: EvidenceBenchOptions) -> Dict[str, Optional[Path]]:
    """The checkpoint of each linker (None for zero-shot), trained as reproduce-synthetic does."""
    from wikivel_bot.train.cascade.fit import CascadeTrainConfig, train_cascade
    from wikivel_bot.train.fitting.loop import TrainConfig, train

    common: Dict[str, Any] = dict(data=str(data), model=str(data / "tiny-model.json"), pretrained="", weights="random",
                                  device="cpu", threads=options.threads, seed=options.seed,
                                  cache_dir=str(out / "cache"), progress=options.progress, patience=100)
    found: Dict[str, Optional[Path]] = {"zero-shot": None}
    wanted = set(options.linkers)
    for name in ("naive-mlp", "fusion"):
        if name in wanted or (name == "naive-mlp" and "cascade" in wanted):  # the cascade's first stage
            result = train(TrainConfig(linker=name, out=str(out / "runs" / name), epochs=options.epochs,
                                       batch_size=ReproduceOptions.batch_size, lr=0.01, **common))
            found[name] = Path(result.best or result.last)
    if "cascade" in wanted:
        result = train_cascade(CascadeTrainConfig(out=str(out / "runs" / "cascade"), first_stage=str(found["naive-mlp"]),
                                                  candidates=options.candidates, epochs=options.cascade_epochs,
                                                  batch_size=32, lr=0.003, **common))
        found["cascade"] = Path(result.best or result.last)
    return {name: found[name] for name in options.linkers}


def compare_evidence(data: Path, checkpoints: Mapping[str, Optional[Path]], out: Path,
                     options: EvidenceBenchOptions) -> EvidenceComparison:
    """Link the splits with each linker, with and without evidence, and score the test split.

    :param checkpoints: {linker name: its checkpoint (None for zero-shot)}.
    :param out: where the evidence models (``out/evidence-models``) and caches go.
    """
    from wikivel_bot.linker.evidence_model import fit, held_out_metrics
    from wikivel_bot.train.data.dataset import image_store, load_dataset, open_labels
    from wikivel_bot.train.evidence.fit import evidence_records
    from wikivel_bot.evaluation.runs.checkpoint import item_image_loader
    from wikivel_bot.train.synthetic.evidence import load_evidence

    dataset = load_dataset(Path(data))
    evidence = load_evidence(Path(data))
    label_set = open_labels(dataset)
    store = image_store(dataset)
    loader = item_image_loader(store)
    splits = {name: _files(dataset, store, name) for name in ("train", "validation", "test")}
    truth = {str(media.page_id): list(evidence.depicts[media.page_id]) for media, _ in splits["test"]}
    misleading = {(media.page_id, ev.qid) for media, _ in splits["test"]
                  for ev in evidence.sources.get(media.page_id, ()) if ev.qid not in evidence.depicts[media.page_id]}
    rows: List[Dict[str, Any]] = []
    models: Dict[str, Dict[str, Any]] = {}
    for name, checkpoint in checkpoints.items():
        def ready(with_evidence: bool, model: str = "") -> Any:
            return _ready(name, checkpoint, data, out, options, label_set, loader,
                          SyntheticResolver(evidence) if with_evidence else None, model)

        plain = ready(False)
        rows.append(_row(name, IMAGE_ONLY, _link(plain, splits["validation"]), _link(plain, splits["test"]),
                         truth, evidence, misleading, options.target))
        records = [r for page_id, found in _link(ready(True), splits["train"]).items()
                   for r in evidence_records(page_id, found, evidence.depicts[page_id])]
        model = fit([r.example() for r in records], l2=options.l2, held_out=0.0, seed=options.seed,
                    data={"synthetic": True, "source": "bench/evidence.py", "linker": name, "split": "train"})
        path = model.save(Path(out) / "evidence-models" / f"{name}.json")
        combined = ready(True, str(path))
        test = _link(combined, splits["test"])
        rows.append(_row(name, WITH_EVIDENCE, _link(combined, splits["validation"]), test, truth, evidence,
                         misleading, options.target))
        checked = [r.example() for page_id, found in test.items()
                   for r in evidence_records(page_id, found, evidence.depicts[page_id])]
        models[name] = {"records": len(records), "version": model.version[:12],
                        "test": held_out_metrics(model, checked)["held_out"],
                        # "auto" resolves per CPU (bf16 where it has AVX512-BF16 or AMX): say which ran.
                        "precision": str(getattr(combined.description, "precision", "") or "")}
    rows.append(_evidence_alone(splits["test"], truth, evidence, misleading))
    return EvidenceComparison(rows=rows, files=len(truth), options=options,
                              shares=dict(dataset.card["evidence"]["realised"]), models=models)


def _files(dataset: Any, store: Any, split: str) -> List[Tuple[MediaFile, bytes]]:
    """(file, image bytes) of a split's files, as the fetcher would hand them to the linker."""
    table = dataset.table
    out = []
    for row in dataset.split_rows(split).tolist():
        page_id, title = int(dataset.page_ids[row]), dataset.titles[row]
        data = store.get(page_id, title)
        if data:
            out.append((MediaFile(page_id=page_id, title=title, description=table.column("description")[row].as_py() or "",
                                  categories=tuple(table.column("categories")[row].as_py() or ())), data))
    return out


def _ready(name: str, checkpoint: Optional[Path], data: Path, out: Path, options: EvidenceBenchOptions,
           label_set: Any, loader: Any, resolver: Optional[SyntheticResolver], model: str) -> Any:
    """The ready linker as every path builds it (``build_ready_linker``), attached to the set."""
    from wikivel_bot.config import CascadeSettings, EvidenceSettings, LinkerSettings, Settings
    from wikivel_bot.linker import build_ready_linker

    linker = LinkerSettings(name=name, model=str(Path(data) / "tiny-model.json"), pretrained="", weights="random",
                            checkpoint=str(checkpoint or ""), device="cpu", threads=options.threads,
                            cache_dir=str(Path(out) / "cache"), batch_size=CHUNK, precision=options.precision,
                            top_k=options.top_k, evidence_model=model,
                            # A random-init backbone's cosines sit around 0: rank them all.
                            min_score=-2.0)
    # The set already holds its category-label evidence, in its configured share.
    settings = dataclasses.replace(Settings(), linker=linker, cascade=CascadeSettings(candidates=options.candidates),
                                   evidence=EvidenceSettings(category_label_match=False))
    source = (lambda: resolver) if resolver is not None else None
    return build_ready_linker(settings, label_set, item_images=lambda: loader, evidence=source)


def _link(ready: Any, files: Sequence[Tuple[MediaFile, bytes]]) -> Dict[int, Tuple[Candidate, ...]]:
    """{page id: candidates, best first} of every file, through ``ReadyLinker.link``."""
    from wikivel_bot.linker.link import Linked

    out: Dict[int, Tuple[Candidate, ...]] = {}
    for start in range(0, len(files), CHUNK):
        for outcome in ready.link(files[start:start + CHUNK]):
            out[outcome.media.page_id] = outcome.candidates if isinstance(outcome, Linked) else ()
    return out


def _value(candidate: Candidate, by_probability: bool) -> float:
    return float(candidate.probability) if by_probability and candidate.probability is not None else candidate.score


def _row(name: str, mode: str, validation: Mapping[int, Sequence[Candidate]], test: Mapping[int, Sequence[Candidate]],
         truth: Mapping[str, Sequence[str]], evidence: SyntheticEvidence, misleading: AbstractSet[Tuple[int, str]],
         target: float) -> Dict[str, Any]:
    """One linker's row: ranking metrics on the test split, and the threshold calibrated on
    validation applied to it (on the probability when the linker gives every candidate one)."""
    by_probability = all(c.probability is not None for found in (*validation.values(), *test.values()) for c in found)

    def pairs(linked: Mapping[int, Sequence[Candidate]]) -> List[Tuple[float, bool, int, Candidate]]:
        return [(_value(c, by_probability), c.qid in evidence.depicts[page_id], page_id, c)
                for page_id, found in linked.items() for c in found]

    chosen = calibrate([(v, y) for v, y, _, _ in pairs(validation)], target, min_support=10)
    threshold = chosen.threshold if chosen.reached else chosen.best_threshold
    scored = pairs(test)
    accepted = [(p, c) for v, _, p, c in scored if threshold is not None and v >= threshold]
    point = apply_threshold([(v, y) for v, y, _, _ in scored], threshold) if threshold is not None else None
    row = _ranking(name, mode, {str(p): [c.qid for c in found] for p, found in test.items()}, truth)
    row.update({
        "precision": point.precision if point is not None else None,
        "recall": (point.correct if point is not None else 0) / _depicted(truth),
        "outside label set": (sum(1 for _, c in accepted if c.evidence.get("in_label_set") is False) / len(accepted)
                              if accepted else None),
        "misleading kept": _share({(p, c.qid) for p, c in accepted}, misleading),
        "threshold": threshold, "on": "P" if by_probability else "score", "reached": chosen.reached,
        "suggestions": len(accepted),
    })
    return row


def _evidence_alone(files: Sequence[Tuple[MediaFile, bytes]], truth: Mapping[str, Sequence[str]],
                    evidence: SyntheticEvidence, misleading: AbstractSet[Tuple[int, str]]) -> Dict[str, Any]:
    """Every evidence item of each test file proposed, ranked by kind (:data:`KIND_ORDER`), no image."""
    in_set = set(evidence.label_qids)
    rankings: Dict[str, List[str]] = {}
    right = proposed = outside = 0
    for media, _ in files:
        kinds: Dict[str, set] = {}
        for ev in evidence.sources.get(media.page_id, ()):
            kinds.setdefault(ev.qid, set()).add(ev.kind)
        ranked = sorted(kinds, key=lambda q: (-len(kinds[q]), min(KIND_ORDER.index(k) for k in kinds[q]), q))
        rankings[str(media.page_id)] = ranked
        proposed += len(ranked)
        right += sum(1 for q in ranked if q in evidence.depicts[media.page_id])
        outside += sum(1 for q in ranked if q not in in_set)
    row = _ranking("evidence", EVIDENCE_ALONE, rankings, truth)
    row.update({"precision": right / proposed if proposed else None, "recall": right / _depicted(truth),
                "outside label set": outside / proposed if proposed else None,
                "misleading kept": _share({(int(f), q) for f, ranked in rankings.items() for q in ranked}, misleading),
                "threshold": None, "on": "",
                "reached": None, "suggestions": proposed})
    return row


def _ranking(name: str, mode: str, rankings: Mapping[str, Sequence[str]], truth: Mapping[str, Sequence[str]]
             ) -> Dict[str, Any]:
    report = score_rankings(((f, rankings.get(f, [])) for f in truth), truth, ks=(1, 5, 10), hops=(0,))
    scores = report.scores[0]
    return {"linker": name, "mode": mode, "R@1": scores["R@1"], "R@10": scores["R@10"], "nDCG@5": scores["nDCG@5"]}


def _share(suggested: AbstractSet[Tuple[int, str]], misleading: AbstractSet[Tuple[int, str]]) -> Optional[float]:
    """The share of the misleading (file, item) pairs among the suggestions; None without any."""
    return len(suggested & misleading) / len(misleading) if misleading else None


def _depicted(truth: Mapping[str, Sequence[str]]) -> int:
    return max(1, sum(len(items) for items in truth.values()))


def comparison_markdown(result: EvidenceComparison) -> str:
    """The table as Markdown (percentages; every row says SYNTHETIC)."""
    o = result.options
    lines = [f"SYNTHETIC: test split of the synthetic evidence set ({result.files} files; hop 0), tiny open_clip "
             f"model with random init; threshold calibrated on the validation split for precision {o.target:.2f} "
             "(* not reached there: the threshold with the best precision there). %.", "",
             "| linker | evidence | " + " | ".join(COLUMNS) + " |", "| --- | --- |" + " ---: |" * len(COLUMNS)]
    for row in result.rows:
        cells = [_pct(row[c]) for c in COLUMNS[:-1]]
        threshold = "—" if row["threshold"] is None else f"{row['on']} ≥ {row['threshold']:.3f}"
        if row["reached"] is False:
            threshold += " *"
        lines.append(f"| {row['linker']} | {row['mode']} | " + " | ".join(cells) + f" | {threshold} |")
    lines += ["", "Evidence models (one per linker, fitted on the linker's candidates over the training split; "
              "measured on the test split's candidates):", "",
              "| linker | precision run | records fitted | version | ECE | ROC-AUC | pairs |",
              "| --- | --- | ---: | --- | ---: | ---: | ---: |"]
    for name, info in result.models.items():
        m = info["test"]
        lines.append(f"| {name} | {info['precision'] or '—'} | {info['records']} | {info['version']} | "
                     f"{m.get('ece', 0):.3f} | {m.get('roc_auc', 0):.3f} | {int(m.get('pairs', 0))} |")
    shares = ", ".join(f"{k} {v:.2f}" for k, v in result.shares.items())
    lines += ["", f"Evidence as drawn (share of files): {shares}."]
    return "\n".join(lines) + "\n"


def _pct(value: Optional[float]) -> str:
    return "—" if value is None else f"{100 * value:.1f}"
