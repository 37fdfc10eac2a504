"""Image only, image + evidence and the image-free baselines on the synthetic evidence set (SYNTHETIC).

The benchmark of Commons' own evidence (``bench/evidence.py``), one function, :func:`run_evidence_bench`:

1. a synthetic evidence set (``train/synthetic/evidence.py``: coloured shapes whose files carry
   category, link and identifier evidence, a controlled share of it wrong — with
   ``evidence_errors.HARD_SHARES`` every kind can be wrong, errors co-occur and the wrong
   items look like the right ones — and a fifth of the leaves outside the label set), split
   60 / 20 / 20 %; and, for "fit at one rate, test at others", the same files with other
   shares (``test_shares``: same images, same split, other evidence);
2. naive-mlp, fusion and the cascade trained on its training split as
   ``dataset reproduce-synthetic`` trains its heads (``train_seed``); zero-shot needs no training;
3. for each linker, files linked through the bot's own path (``build_ready_linker`` and
   ``ReadyLinker.link``), with the set's evidence handed over by :class:`SyntheticResolver`:

   * **image only** — no evidence; suggestions by the linker's own probability or score;
   * **image + evidence** — the evidence model is fitted on the *validation* split's
     candidates, whose image scores come from heads that never saw those files (the training
     split's would be optimistic), **cross-fitted**: each validation file's probability, which
     the threshold is calibrated on, comes from a model fitted on the other folds; the model
     fitted on all of them is set as ``linker.evidence_model`` for the test split, and what
     ``ReadyLinker.link`` serves is what is measured;

4. the image-free baselines: **evidence alone** (every evidence item, ranked by kind), and
   **evidence kinds only** — the *rule* (drop an item named by one linked category and nothing
   else) and a *model* on the kinds alone (the evidence model's fit on kind features only,
   fitted on the training split, its threshold calibrated on validation).

Measured on the test split (hop 0) per file (``evidence_measures``): R@1, R@10, nDCG@5,
precision and recall at the threshold calibrated on validation for the target precision,
the image's **paired** gain over the kinds-only baselines with 95 % intervals over files,
the served probabilities' calibration (overall and on evidence candidates) and the ROC-AUC
on lone-category evidence with its interval. Every figure is SYNTHETIC.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

import numpy as np

from wikivel_bot.core.calibration import calibrate
from wikivel_bot.errors import UsageError
from wikivel_bot.evaluation.runs.evidence_baselines import (
    BASELINES,
    EVIDENCE_ALONE,
    KINDS_MODEL,
    KINDS_RULE,
    SetSplits,
    evidence_alone,
    fit_kinds,
    kind_examples,
    kind_rows,
    kinds_model,
    kinds_rule,
)
from wikivel_bot.evaluation.runs.evidence_linking import (
    SyntheticResolver,
    link_files_of,
    ready_linker,
    split_files,
    train_linkers,
)
from wikivel_bot.evaluation.runs.evidence_measures import (
    Outcome,
    Truth,
    lone_category_auc,
    paired_gain,
    row_of,
    served_calibration,
)
from wikivel_bot.evaluation.runs.reproduce import ReproduceOptions
from wikivel_bot.train.synthetic.evidence import SyntheticEvidence
from wikivel_bot.types import Candidate

__all__ = ["SyntheticResolver", "run_evidence_bench", "compare_evidence", "EvidenceBenchOptions",
           "EvidenceComparison", "BASELINES", "EVIDENCE_ALONE", "KINDS_MODEL", "KINDS_RULE"]

LINKERS = ("zero-shot", "naive-mlp", "fusion", "cascade")
IMAGE_ONLY = "image only"
WITH_EVIDENCE = "image + evidence"
COLUMNS = ("R@1", "R@10", "nDCG@5", "precision", "recall", "outside label set", "misleading kept", "threshold")


@dataclass
class EvidenceBenchOptions:
    """How big and how long (docs/benchmarks.md, "Commons' own evidence").

    :param files: synthetic files (``fractions`` train / validation / test).
    :param seed: of the data and the split (the data seed).
    :param train_seed: of the heads' training and the cross-fitting folds (None: ``seed``).
    :param shares: overrides of ``train.synthetic.evidence.DEFAULT_SHARES`` and the error knobs.
    :param test_shares: (name, overrides of ``shares``) of further test sets: the same files
        with other evidence, linked with what was fitted on the first set.
    :param epochs: naive-mlp and fusion epochs (batch 128, lr 0.01, as ``ReproduceOptions``);
    :param cascade_epochs: the cascade's (batch 32, lr 0.003, as ``bench/cascade_quality.py``).
    :param candidates: the cascade's first-stage candidates K.
    :param top_k: suggestions per file the image proposes (the evidence items come besides).
    :param target: the precision the threshold is calibrated for on the validation split.
    :param l2: the evidence model's penalty. :param folds: cross-fitting folds of validation.
    :param threads: torch CPU threads. :param precision: ``linker.precision`` of every linker.
    :param linkers: which of :data:`LINKERS` to run (all by default).
    """

    files: int = 1200
    seed: int = 0
    train_seed: Optional[int] = None
    shares: Mapping[str, float] = field(default_factory=dict)
    test_shares: Tuple[Tuple[str, Mapping[str, float]], ...] = ()
    fractions: Tuple[float, float, float] = (0.6, 0.2, 0.2)
    epochs: int = ReproduceOptions.epochs
    cascade_epochs: int = 10
    candidates: int = 50
    top_k: int = 10
    target: float = 0.9
    l2: float = 1.0
    folds: int = 2
    threads: int = 2
    precision: str = "auto"
    linkers: Tuple[str, ...] = LINKERS
    progress: bool = False

    @property
    def training_seed(self) -> int:
        return self.seed if self.train_seed is None else self.train_seed


@dataclass
class EvidenceComparison:
    """The rows (``linker``, ``mode``, the :data:`COLUMNS`...), the paired gains, the served
    calibration, and the same per further test set (``conditions``)."""

    rows: List[Dict[str, Any]]
    files: int
    options: EvidenceBenchOptions
    shares: Mapping[str, Any]
    models: Dict[str, Dict[str, Any]] = field(default_factory=dict)
    gains: Dict[str, Dict[str, Dict[str, Any]]] = field(default_factory=dict)
    calibration: Dict[str, Dict[str, Any]] = field(default_factory=dict)
    conditions: Dict[str, Dict[str, Any]] = field(default_factory=dict)
    seconds: Dict[str, float] = field(default_factory=dict)

    def row(self, linker: str, mode: str) -> Dict[str, Any]:
        """The row of ``linker`` (``evidence`` for the image-free baselines) in ``mode``."""
        return next(r for r in self.rows if r["linker"] == linker and r["mode"] == mode)

    def as_dict(self) -> Dict[str, Any]:
        """Everything measured, as JSON (the raw result of one seed)."""
        o = self.options
        return {"synthetic": True, "options": {"files": o.files, "data_seed": o.seed, "train_seed": o.training_seed,
                                               "shares": dict(o.shares), "fractions": list(o.fractions),
                                               "test_shares": {n: dict(s) for n, s in o.test_shares},
                                               "epochs": o.epochs, "cascade_epochs": o.cascade_epochs,
                                               "target": o.target, "folds": o.folds, "linkers": list(o.linkers)},
                "test_files": self.files, "shares_realised": dict(self.shares), "rows": self.rows,
                "gains": self.gains, "calibration": self.calibration, "models": self.models,
                "conditions": self.conditions, "seconds": self.seconds}


def make_sets(root: Path, options: EvidenceBenchOptions) -> Dict[str, Path]:
    """The set the models are fitted on (``root/syn``) and each further test set (``root/test-<name>``)."""
    from wikivel_bot.train.synthetic.evidence import make_evidence_synthetic

    sets = {"": Path(root) / "syn"}
    sets.update({name: Path(root) / f"test-{name}" for name, _ in options.test_shares})
    overrides = {"": {}, **{name: dict(extra) for name, extra in options.test_shares}}
    for name, path in sets.items():
        make_evidence_synthetic(path, options.files, options.seed, force=True, fractions=options.fractions,
                                shares={**dict(options.shares), **overrides[name]})
    return sets


def run_evidence_bench(out: Path, options: EvidenceBenchOptions = EvidenceBenchOptions(),
                       sets: Optional[Mapping[str, Path]] = None) -> EvidenceComparison:
    """Make the sets (unless given, :func:`make_sets`), train into ``out/runs``, and compare."""
    unknown = sorted(set(options.linkers) - set(LINKERS))
    if unknown:
        raise UsageError(f"unknown linker {unknown[0]!r} (known: {', '.join(LINKERS)})")
    out = Path(out)
    started = time.perf_counter()
    sets = dict(sets) if sets is not None else make_sets(out, options)
    checkpoints = train_linkers(sets[""], out, options)
    trained = time.perf_counter() - started
    result = compare_evidence(sets, checkpoints, out, options)
    result.seconds = {"training": trained, "total": time.perf_counter() - started}
    return result


def _open_set(path: Path, splits: Sequence[str]) -> Tuple[SetSplits, Any, Any]:
    from wikivel_bot.evaluation.runs.checkpoint import item_image_loader
    from wikivel_bot.train.data.dataset import image_store, load_dataset, open_labels
    from wikivel_bot.train.synthetic.evidence import load_evidence

    dataset = load_dataset(path)
    store = image_store(dataset)
    found = SetSplits(load_evidence(path), {s: split_files(dataset, store, s) for s in splits},
                      dict(dataset.card["evidence"]["realised"]))
    return found, open_labels(dataset), item_image_loader(store)


def compare_evidence(sets: Mapping[str, Path], checkpoints: Mapping[str, Optional[Path]], out: Path,
                     options: EvidenceBenchOptions) -> EvidenceComparison:
    """Link the splits with each linker, with and without evidence, and measure the test splits.

    :param sets: {"": the set fitted on, name: each further test set}.
    :param checkpoints: {linker name: its checkpoint (None for zero-shot)}.
    :param out: where the evidence models (``out/evidence-models``) and caches go.
    """
    fitted, label_set, loader = _open_set(sets[""], ("train", "validation", "test"))
    # Each set draws its own P18 pictures of the items outside the label set it names.
    loaders = {"": loader}
    tests = {"": fitted}
    for test_name, path in sets.items():
        if test_name:
            tests[test_name], _, loaders[test_name] = _open_set(path, ("test",))
    kinds = fit_kinds(kind_examples(fitted, "train"), options.l2, options.seed)
    kinds_threshold = _threshold([(kinds.probability(x), y) for x, y, _, _ in kind_rows(fitted, "validation")],
                                 options.target)
    outcomes: Dict[str, List[Outcome]] = {name: [] for name in tests}
    models: Dict[str, Dict[str, Any]] = {}
    for name, checkpoint in checkpoints.items():
        def ready(split: Optional[SetSplits], model: str = "", test_name: str = "") -> Any:
            return ready_linker(name, checkpoint, sets[""], out, options, label_set, loaders[test_name],
                                SyntheticResolver(split.evidence) if split is not None else None, model)

        plain = ready(None)
        validation = _pairs(link_files_of(plain, fitted.files["validation"]), fitted.evidence)
        outcomes[""].append(_outcome(name, IMAGE_ONLY, link_files_of(plain, fitted.files["test"]), fitted,
                                     _threshold(validation, options.target)))
        model, oof, records = _cross_fit(link_files_of(ready(fitted), fitted.files["validation"]), fitted, options)
        path = model.save(Path(out) / "evidence-models" / f"{name}.json")
        threshold = _threshold(oof, options.target)
        models[name] = {"records": records, "version": model.version[:12], "fitted_on": "validation (cross-fitted)"}
        for test_name, split in tests.items():
            served = ready(split, str(path), test_name)
            outcomes[test_name].append(_outcome(name, WITH_EVIDENCE, link_files_of(served, split.files["test"]),
                                                split, threshold))
            if not test_name:
                models[name]["precision"] = str(getattr(served.description, "precision", "") or "")
    result = EvidenceComparison(rows=[], files=len(fitted.files["test"]), options=options, shares=fitted.realised,
                                models=models)
    for test_name, split in tests.items():
        rows = outcomes[test_name] + [evidence_alone(split), kinds_rule(split),
                                      kinds_model(split, kinds, kinds_threshold)]
        measured = _measure(rows, split.truth("test"), options)
        if not test_name:
            result.rows, result.gains, result.calibration = measured["rows"], measured["gains"], measured["calibration"]
        else:
            result.conditions[test_name] = {**measured, "shares_realised": dict(split.realised),
                                            "shares": dict(dict(options.test_shares)[test_name])}
    return result


def _measure(outcomes: Sequence[Outcome], truth: Truth, options: EvidenceBenchOptions) -> Dict[str, Any]:
    """Rows, the paired gains of each linker's image + evidence over the image-free baselines,
    and the served calibration, on one test split."""
    seed = options.training_seed
    by_key = {(o.linker, o.mode): o for o in outcomes}
    gains: Dict[str, Dict[str, Any]] = {}
    calibration: Dict[str, Dict[str, Any]] = {}
    for o in outcomes:
        if o.mode == WITH_EVIDENCE:
            gains[o.linker] = {}
            for base in BASELINES:
                found = paired_gain(o, by_key[("evidence", base)], truth, seed)
                gains[o.linker][base] = {k: (v.as_dict() if v is not None else None) for k, v in found.items()}
        if o.served:
            key = o.linker if o.mode == WITH_EVIDENCE else f"{o.linker} ({o.mode})"
            calibration[key] = {**served_calibration(o), "lone_category": lone_category_auc(o, seed)}
    return {"rows": [row_of(o, truth) for o in outcomes], "gains": gains, "calibration": calibration}


def _threshold(pairs: Sequence[Tuple[float, bool]], target: float) -> Tuple[Optional[float], Optional[bool]]:
    """The lowest threshold reaching ``target`` precision (``core.calibration.calibrate``); when
    none does, the best-precision one (reached False)."""
    chosen = calibrate(list(pairs), target, min_support=10)
    return (chosen.threshold if chosen.reached else chosen.best_threshold), chosen.reached


def _value(candidate: Candidate, by_probability: bool) -> float:
    return float(candidate.probability) if by_probability and candidate.probability is not None else candidate.score


def _by_probability(linked: Mapping[int, Sequence[Candidate]]) -> bool:
    return all(c.probability is not None for found in linked.values() for c in found)


def _pairs(linked: Mapping[int, Sequence[Candidate]], evidence: SyntheticEvidence) -> List[Tuple[float, bool]]:
    on_p = _by_probability(linked)
    return [(_value(c, on_p), c.qid in evidence.depicts[p]) for p, found in linked.items() for c in found]


def _kinds_of(candidate: Candidate) -> Tuple[str, ...]:
    return tuple(str(s["kind"]) for s in candidate.evidence.get("sources") or ())


def _outcome(name: str, mode: str, linked: Mapping[int, Sequence[Candidate]], split: SetSplits,
             threshold: Tuple[Optional[float], Optional[bool]]) -> Outcome:
    """A linker's row: its rankings, what passes the threshold, and what it served."""
    on_p = _by_probability(linked)
    value, reached = threshold
    files = tuple(m.page_id for m, _ in split.files["test"])
    served = [(p, float(c.probability), c.qid in split.evidence.depicts[p], _kinds_of(c))
              for p, found in linked.items() for c in found if c.probability is not None]
    return Outcome(name, mode, files, {p: [c.qid for c in linked.get(p, ())] for p in files},
                   {p: [c.qid for c in linked.get(p, ()) if value is not None and _value(c, on_p) >= value]
                    for p in files}, value, "P" if on_p else "score", reached, served)


def _cross_fit(linked: Mapping[int, Sequence[Candidate]], split: SetSplits, options: EvidenceBenchOptions
               ) -> Tuple[Any, List[Tuple[float, bool]], int]:
    """The evidence model fitted on all of ``linked`` (validation files), the out-of-fold
    (probability, label) of each candidate for the threshold, and the record count."""
    from wikivel_bot.linker.evidence_model import fit
    from wikivel_bot.train.evidence.fit import evidence_records

    records = {p: evidence_records(p, found, split.evidence.depicts[p]) for p, found in linked.items()}
    files = sorted(records)
    order = np.random.default_rng([options.training_seed, 44]).permutation(len(files))
    fold = {files[i]: position % max(2, options.folds) for position, i in enumerate(order.tolist())}
    oof: List[Tuple[float, bool]] = []
    for k in range(max(2, options.folds)):
        train = [r.example() for p in files if fold[p] != k for r in records[p]]
        model = fit(train, l2=options.l2, held_out=0.0, seed=options.seed, data={"synthetic": True})
        oof += [(model.probability(r.features()), r.label) for p in files if fold[p] == k for r in records[p]]
    every = [r.example() for p in files for r in records[p]]
    model = fit(every, l2=options.l2, held_out=0.0, seed=options.seed,
                data={"synthetic": True, "source": "bench/evidence.py", "split": "validation",
                      "note": "image scores from heads that never saw these files"})
    return model, oof, len(every)
