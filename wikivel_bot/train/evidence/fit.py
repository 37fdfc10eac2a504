"""Candidate records for the evidence model, and fitting it from them (``train evidence``).

A record is one candidate of one file with what the evidence model reads and whether the file
depicts it (JSON lines, one record a line)::

    {"file": "1000", "qid": "Q9001203", "visual_score": 0.31, "best_visual_score": 0.31,
     "image_rank": 1, "kinds": ["category"], "in_label_set": true, "label": true}

``image_rank`` is the item's 1-based rank in the image's top-K over the label set, ``null``
when the image alone did not propose it. A file may start with one header line naming what
the records are (``{"about": {"synthetic": true, "source": ..., "linker": ...}}``); the
fitted checkpoint keeps it.

Records come from:

* a linking run, candidate by candidate: :func:`evidence_records` reads what the linker puts in
  ``Candidate.evidence`` (``visual_score``, ``best_visual_score``, ``sources``, ``in_label_set``
  and ``image_rank``) — the values the served probability was computed from;
* any per-item image scores of a file and its evidence: :func:`records_from_scores` makes the
  candidate set as the linker does (the image's top-K over the label set, plus every evidence
  item) — the synthetic evidence dataset with simulated scores uses it
  (``train.synthetic.evidence.simulated_records``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Collection, Container, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple, Union

from wikivel_bot.core.evidence import Evidence, EvidenceLike
from wikivel_bot.errors import UsageError
from wikivel_bot.linker import evidence_model
from wikivel_bot.types import Candidate

HEADER = "about"
RECORD_KEYS = ("file", "qid", "visual_score", "best_visual_score", "image_rank", "kinds", "in_label_set", "label")


@dataclass(frozen=True)
class CandidateRecord:
    """One candidate of one file, as the evidence model is fitted on it (see the module docstring)."""

    file: str
    qid: str
    visual_score: float
    best_visual_score: float
    image_rank: Optional[int]
    kinds: Tuple[str, ...]
    in_label_set: bool
    label: bool

    def features(self) -> List[float]:
        """:func:`~wikivel_bot.linker.evidence_model.candidate_features` of this candidate."""
        return evidence_model.candidate_features(self.visual_score, self.best_visual_score, self.image_rank,
                                                 self.kinds, self.in_label_set)

    def example(self) -> evidence_model.Example:
        return evidence_model.Example(self.file, self.features(), self.label)

    def as_dict(self) -> Dict[str, Any]:
        return {"file": self.file, "qid": self.qid, "visual_score": self.visual_score,
                "best_visual_score": self.best_visual_score, "image_rank": self.image_rank,
                "kinds": list(self.kinds), "in_label_set": self.in_label_set, "label": self.label}

    @classmethod
    def from_dict(cls, doc: Mapping[str, Any]) -> "CandidateRecord":
        """Back from :meth:`as_dict`.

        :raises ValueError: a missing key or a value of the wrong type (the message names it).
        """
        missing = [key for key in RECORD_KEYS if key not in doc]
        if missing:
            raise ValueError(f"no {missing[0]!r}")
        try:
            rank = doc["image_rank"]
            kinds = doc["kinds"]
            if rank is not None and (isinstance(rank, bool) or not isinstance(rank, int)):
                raise ValueError(f"image_rank must be a whole number or null, not {rank!r}")
            if not isinstance(kinds, list) or not all(isinstance(k, str) for k in kinds):
                raise ValueError(f"kinds must be a list of evidence kinds, not {kinds!r}")
            for key in ("in_label_set", "label"):
                if not isinstance(doc[key], bool):
                    raise ValueError(f"{key} must be true or false, not {doc[key]!r}")
            record = cls(file=str(doc["file"]), qid=str(doc["qid"]), visual_score=float(doc["visual_score"]),
                         best_visual_score=float(doc["best_visual_score"]), image_rank=rank, kinds=tuple(kinds),
                         in_label_set=doc["in_label_set"], label=doc["label"])
        except TypeError as exc:
            raise ValueError(str(exc)) from None
        record.features()  # unknown kinds and bad ranks are refused here, not at fit time
        return record


def _kinds(sources: Iterable[EvidenceLike]) -> Tuple[str, ...]:
    kinds = (s.kind if isinstance(s, Evidence) else str(s["kind"]) for s in sources)
    return tuple(dict.fromkeys(kinds))


def evidence_records(file: Union[int, str], candidates: Sequence[Candidate],
                     depicted: Collection[str]) -> List[CandidateRecord]:
    """The records of one linked file, from its candidates as the linker made them.

    Each record holds exactly what the linker stored in ``Candidate.evidence`` and computed the
    served probability from (``evidence_model.served_features``): ``visual_score``,
    ``best_visual_score`` (the best over the file's candidate set *before* the ranking rules —
    not re-taken over the candidates kept after them, which would fit the model on features
    it is never served), ``sources``, ``in_label_set`` and ``image_rank``.

    :param file: the file's page id (the held-out part is split by file).
    :param candidates: every candidate the linker kept for the file, before any threshold.
    :param depicted: the items the file depicts (the answers).
    :raises ValueError: a candidate without a stored visual score or best visual score (the
        message names it: it was linked before they were stored; link it again).
    """
    out = []
    for candidate in candidates:
        evidence = candidate.evidence
        try:
            evidence_model.served_features(evidence)
        except ValueError as exc:
            raise ValueError(f"candidate {candidate.qid} of file {file}: {exc}") from None
        rank = evidence.get("image_rank")
        out.append(CandidateRecord(file=str(file), qid=candidate.qid, visual_score=float(evidence["visual_score"]),
                                   best_visual_score=float(evidence["best_visual_score"]),
                                   image_rank=int(rank) if rank is not None else None,
                                   kinds=_kinds(evidence.get("sources") or ()),
                                   in_label_set=bool(evidence.get("in_label_set", True)),
                                   label=candidate.qid in depicted))
    return out


def records_from_scores(file: Union[int, str], scores: Mapping[str, float], sources: Sequence[EvidenceLike],
                        depicted: Collection[str], in_label_set: Container[str], top_k: int = 10
                        ) -> List[CandidateRecord]:
    """The records of one file from per-item image scores, with the linker's candidate set.

    The candidates are the image's ``top_k`` over the label set (by score, ties by item id)
    and every item the evidence names; ranks count within the label set only.

    :param scores: image score per item: every label-set item to rank, and each evidence item.
    :param sources: the file's evidence (:class:`Evidence` or its dict).
    :param depicted: the items the file depicts.
    :param in_label_set: the label set's items.
    :raises ValueError: an evidence item without a score.
    """
    evidence = [s if isinstance(s, Evidence) else Evidence.from_dict(s) for s in sources]
    ranked = sorted((q for q in scores if q in in_label_set), key=lambda q: (-scores[q], q))[:top_k]
    ranks = {qid: position for position, qid in enumerate(ranked, 1)}
    kinds: Dict[str, List[str]] = {}
    for ev in evidence:
        kinds.setdefault(ev.qid, []).append(ev.kind)
    missing = [q for q in kinds if q not in scores]
    if missing:
        raise ValueError(f"file {file}: evidence item {missing[0]} has no image score")
    chosen = list(dict.fromkeys([*ranked, *kinds]))
    best = max(scores[q] for q in chosen) if chosen else 0.0
    return [CandidateRecord(file=str(file), qid=q, visual_score=float(scores[q]), best_visual_score=float(best),
                            image_rank=ranks.get(q), kinds=tuple(dict.fromkeys(kinds.get(q, ()))),
                            in_label_set=q in in_label_set, label=q in depicted) for q in chosen]


def write_records(path: Path, records: Iterable[CandidateRecord], about: Optional[Mapping[str, Any]] = None) -> int:
    """Write records as JSON lines (with a header line when ``about`` is given); returns the count."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    count = 0
    with path.open("w", encoding="utf-8") as handle:
        if about is not None:
            handle.write(json.dumps({HEADER: dict(about)}) + "\n")
        for record in records:
            handle.write(json.dumps(record.as_dict()) + "\n")
            count += 1
    return count


def read_records(path: Path) -> Tuple[Dict[str, Any], List[CandidateRecord]]:
    """(the header's ``about``, or {}; the records) of a records file.

    :raises UsageError: a missing file, or a line that is not a record (file and line named).
    """
    path = Path(path)
    about: Dict[str, Any] = {}
    records: List[CandidateRecord] = []
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        raise UsageError(f"{path}: no such records file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"{path}: unreadable: {exc}") from None
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            doc = json.loads(line)
            if not isinstance(doc, dict):
                raise ValueError("not a JSON object")
            if number == 1 and set(doc) == {HEADER} and isinstance(doc[HEADER], dict):
                about = dict(doc[HEADER])
                continue
            records.append(CandidateRecord.from_dict(doc))
        except ValueError as exc:
            raise UsageError(f"{path}:{number}: not a candidate record: {exc}") from None
    if not records:
        raise UsageError(f"{path}: holds no candidate records")
    return about, records


def fit_records(path: Path, out: Path, *, l2: float = 1.0, held_out: float = 0.25, seed: int = 0,
                synthetic: Optional[bool] = None) -> evidence_model.EvidenceModel:
    """Fit the evidence model on a records file and save the checkpoint.

    :param path: the records (JSON lines).
    :param out: the checkpoint to write.
    :param synthetic: override the header's ``synthetic`` (True for generated records).
    :returns: the fitted model (its metrics are measured on the held-out files).
    """
    about, records = read_records(path)
    data = {**about, "records_file": str(path)}
    if synthetic is not None:
        data["synthetic"] = synthetic
    data["synthetic"] = bool(data.get("synthetic", False))
    model = evidence_model.fit([r.example() for r in records], l2=l2, held_out=held_out, seed=seed, data=data)
    model.save(out)
    return model
