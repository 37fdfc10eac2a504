"""The evidence model learned from reviewers' decisions, judged like the other learners (docs/learning.md).

No evidence model ships (there is no Commons data here to fit one on), so in a deployment the
file's evidence only re-ranks what the image already keeps. Reviewers' decisions are that
data: every decided pair was shown with what the linker stored for the evidence model (its
visual score, the file's best, its image rank, its evidence kinds, whether it is in the label
set; ``records`` keeps it as ``served``), and the answer.

So a round also fits an evidence model (``train.evidence.fit.fit_records``, the evidence
model's own fit) on the decided pairs of the ``train`` files and runs the same contest as the
linker's challenger (``learning.contest``: the utility rule on the ``evaluation`` files, each
reviewer's share capped, leave-one-reviewer-out) against what runs now: the configured
``linker.evidence_model``, or without one the image alone — the visual score through a Platt
map fitted on the ``calibration`` files. A winner is saved beside the round's checkpoint and
runs with it (``linker.learned.learned_evidence_model``); an explicit ``linker.evidence_model``
still wins over it. Pairs shown before the linker stored these values are left out (counted).
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

from wikivel_bot.errors import UsageError
from wikivel_bot.learning.contest import Contest, Rules, contest, unjudged

MODEL_FILE = "evidence-model.json"


@dataclass
class _Files:
    """Stands in for the file rows' tensor the contest counts files with (``tolist``)."""

    rows: List[int]

    def tolist(self) -> List[int]:
        return list(self.rows)


@dataclass
class EvidenceDecisions:
    """Decided pairs as evidence-model candidates: what the contest reads of a round's data."""

    records: List[Any]            # train.evidence.fit.CandidateRecord, one a decided pair
    split: List[str]
    reviewer: List[str]
    skipped: Dict[str, int] = field(default_factory=dict)

    @property
    def pair_file(self) -> _Files:
        return _Files([int(r.file) for r in self.records])

    def reviewers(self) -> List[str]:
        return list(self.reviewer)

    def keep(self, mask: Sequence[bool]) -> "EvidenceDecisions":
        at = [i for i, k in enumerate(mask) if k]
        return replace(self, records=[self.records[i] for i in at], split=[self.split[i] for i in at],
                       reviewer=[self.reviewer[i] for i in at])

    def part(self, name: str) -> List[Any]:
        return [r for r, s in zip(self.records, self.split) if s == name]


def decided_candidates(records: Sequence[Any]) -> EvidenceDecisions:
    """Every decided pair with the served values it was shown with (``learning.records``)."""
    from wikivel_bot.train.evidence.fit import CandidateRecord

    out, split, reviewer = [], [], []
    skipped = {"shown without served values": 0}
    for record in records:
        shown = {str(s.get("qid")): s for s in record.shown}
        for qid, label in [(q, True) for q in record.positives] + [(q, False) for q in record.negatives]:
            entry = shown.get(qid) or {}
            served = entry.get("served")
            if not isinstance(served, dict):
                skipped["shown without served values"] += 1
                continue
            rank = served.get("image_rank")
            kinds = tuple(dict.fromkeys(str(s.get("kind")) for s in entry.get("evidence") or () if s.get("kind")))
            out.append(CandidateRecord(file=str(record.page_id), qid=qid, visual_score=float(served["visual_score"]),
                                       best_visual_score=float(served["best_visual_score"]),
                                       image_rank=None if rank is None else int(rank), kinds=kinds,
                                       in_label_set=bool(served.get("in_label_set", True)), label=label))
            split.append(record.split)
            reviewer.append(str(record.reviewers.get(qid, "")))
    return EvidenceDecisions(out, split, reviewer, skipped)


@dataclass(frozen=True)
class ImageOnly:
    """What runs without an evidence model: the visual score alone, through a Platt map."""

    description: str = "the image alone (its visual score, Platt on the calibration files)"


@dataclass(frozen=True)
class AsFitted:
    """The calibration of a model whose output already is a probability (the evidence model's
    logistic regression); ``a`` is its slope for ``contest.recalibration_refused``."""

    a: float = 1.0


class EvidenceLearner:
    """The contest's learner for the evidence model (``learning.contest`` reads ``champion``,
    ``fine_tune``, ``calibrate`` and ``judged``)."""

    def __init__(self, champion: Any, seed: int) -> None:
        self.champion = champion
        self.seed = seed

    def fine_tune(self, data: EvidenceDecisions, epochs: int, lr: float, seed: int) -> Optional[Any]:
        """The evidence model fitted on the ``train`` pairs (its own fit; epochs and lr do not
        apply); None when they are of one kind."""
        from wikivel_bot.train.evidence.fit import fit_records, write_records

        train = data.part("train")
        if not train:
            return None
        with tempfile.TemporaryDirectory(prefix="wikivel-evidence-") as tmp:
            path = Path(tmp) / "records.jsonl"
            write_records(path, train, about={"source": "reviewers' decisions", "synthetic": False})
            try:
                return fit_records(path, Path(tmp) / MODEL_FILE, held_out=0.0, seed=self.seed, synthetic=False)
            except UsageError:
                return None

    def calibrate(self, model: Any, data: EvidenceDecisions, top_k: int) -> Optional[Any]:
        if model is None:
            return None
        if not isinstance(model, ImageOnly):
            return AsFitted()
        from wikivel_bot.core.verification import fit_calibration

        calibration = data.part("calibration")
        try:
            return fit_calibration([r.visual_score for r in calibration], [r.label for r in calibration], "platt")
        except UsageError:
            return None

    def judged(self, model: Any, data: EvidenceDecisions, calibration: Any, top_k: int
               ) -> List[Tuple[int, List[float], List[bool], List[bool]]]:
        """Per evaluation file: (page id, probabilities, labels, suggested) of its decided pairs;
        every one was shown, so every one may be selected."""
        grouped: Dict[int, Tuple[List[float], List[bool], List[bool]]] = {}
        for record in data.part("evaluation"):
            if isinstance(model, ImageOnly):
                p = calibration.probability(record.visual_score)
            else:
                p = model.probability(record.features())
            entry = grouped.setdefault(int(record.file), ([], [], []))
            entry[0].append(float(p))
            entry[1].append(bool(record.label))
            entry[2].append(True)
        return [(page, *grouped[page]) for page in sorted(grouped)]


def learn_evidence_model(records: Sequence[Any], running: Optional[Any], rules: Rules) -> Tuple[Contest, Dict[str, Any]]:
    """The round's evidence-model contest (module docstring).

    :param running: the configured evidence model (``linker.evidence_model`` loaded), or None.
    :returns: (the contest: ``challenger`` is the fitted model, ``verdict.promote`` whether it
        runs; a report for the round's ``report.json``).
    """
    data = decided_candidates(records)
    champion = running if running is not None else ImageOnly()
    if not data.part("train"):
        outcome = Contest(unjudged("no decided pair of the train files carries the values the evidence model reads "
                                   "(shown before the linker stored them)", 0, rules.threshold), None, None, None)
    else:
        outcome = contest(EvidenceLearner(champion, rules.seed), data, rules)
    report = {"champion": getattr(champion, "version", None) or ImageOnly().description,
              "pairs": {name: len(data.part(name)) for name in ("train", "calibration", "evaluation")},
              "skipped": dict(data.skipped), "verdict": outcome.verdict.as_json(), **outcome.report()}
    return outcome, report


def save_evidence_model(model: Any, directory: Path) -> Dict[str, str]:
    """Write the won evidence model beside a round's checkpoint; what its ``extra`` records."""
    model.save(Path(directory) / MODEL_FILE)
    return {"path": MODEL_FILE, "version": model.version}


def running_evidence_model(configured: str, running: Any) -> Optional[Any]:
    """The evidence model that runs now: ``linker.evidence_model`` when set, else the one a
    learned running checkpoint carries beside itself (``extra.evidence_model``), else None."""
    from wikivel_bot.linker.evidence_model import load

    if configured:
        return load(Path(configured))
    extra = getattr(running, "extra", None) if running is not None else None
    doc = extra.get("evidence_model") if isinstance(extra, dict) else None
    if isinstance(doc, dict) and isinstance(doc.get("path"), str):
        return load(Path(running.path).parent / doc["path"])
    return None
