"""A checkpoint learned from reviewers' decisions runs with its calibration (docs/learning.md).

``learning.cycle`` stores in the checkpoint's ``extra`` the Platt calibration of the model's
cosine, fitted on its own suggestions of held-out decisions, and the operating threshold
where that probability reaches ``learning.threshold``. The factory applies both:

* :func:`operating_threshold` replaces ``linker.min_score`` (the model's score scale is its
  own: a fixed minimum chosen for the model before would let precision drift);
* :class:`LearnedProbability` gives every suggestion its calibrated probability, so the
  uncertainty review order compares like with like (probability against
  ``learning.threshold``, docs/learning.md) and reviewers see it. A configured verifier
  (``linker.verifier``) or evidence model still replaces it with its own.

The calibration is part of the checkpoint file, so its digest in the linker version names it.

With ``linker.verifier`` set, the round also re-fits the verifier's calibration on the
decisions (``train/decisions/verifier.py``) and stores it as ``verifier_calibration``, keyed by
the verifier checkpoint's digest: :func:`learned_verifier_calibration` hands it to the factory,
which gives it to that verifier (another verifier keeps its own). When the verifier's weights
fine-tuned on the decisions measurably beat that re-fit (``train/decisions/verifier.py``), the round writes them as a cascade checkpoint
beside the challenger (``verifier_checkpoint``, under the same key): :func:`learned_verifier_checkpoint`
names that file, and the factory runs it in that verifier's place.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from wikivel_bot.core.verification import Calibration
from wikivel_bot.errors import LinkerError
from wikivel_bot.linker.base import Linker, LinkerWrapper
from wikivel_bot.types import MediaFile


def _extra(linker: Linker) -> Mapping[str, Any]:
    inner = getattr(linker, "inner", linker)  # the linker a verifier sits beside
    checkpoint = getattr(inner, "checkpoint", None)
    extra = getattr(checkpoint, "extra", None) if checkpoint is not None else None
    # Only a checkpoint of `train --from-decisions` (learning.cycle) says how it was calibrated here.
    return extra if isinstance(extra, Mapping) and "from_decisions" in extra else {}


def _number(value: Any) -> Optional[float]:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def operating_threshold(linker: Linker) -> Optional[float]:
    """The minimum score the learned checkpoint runs at, or None for any other linker (or a
    learned one whose calibration found no usable threshold: ``linker.min_score`` applies)."""
    return _number(_extra(linker).get("operating_threshold"))


def learned_calibration(linker: Linker) -> Optional[Tuple[float, float]]:
    """Platt's (a, b) of a checkpoint learned from decisions, or None."""
    calibration = _extra(linker).get("calibration")
    if not isinstance(calibration, Mapping) or calibration.get("method") != "platt":
        return None
    a, b = _number(calibration.get("a")), _number(calibration.get("b"))
    return None if a is None or b is None else (a, b)


def learned_verifier_calibration(linker: Linker, verifier_digest: str) -> Optional[Calibration]:
    """The verifier calibration a checkpoint learned from decisions re-fitted on them, when
    it was fitted for the verifier checkpoint of ``verifier_digest``; None otherwise.

    :raises LinkerError: the stored map is damaged (one line).
    """
    doc = _extra(linker).get("verifier_calibration")
    if not isinstance(doc, Mapping) or doc.get("verifier_digest") != verifier_digest:
        return None
    try:
        return Calibration.from_dict(doc["calibration"])
    except (KeyError, TypeError, ValueError) as exc:
        raise LinkerError(f"the learned checkpoint's verifier_calibration is not a calibration map ({exc})") from None


def learned_verifier_checkpoint(linker: Linker, verifier_digest: str) -> Optional[Path]:
    """The tuned verifier a checkpoint learned from decisions wrote beside itself, when it was
    tuned from the verifier checkpoint of ``verifier_digest``; None otherwise.

    :raises LinkerError: the record is damaged, the file is missing, or it is not the file the
        round wrote (its digest differs) — one line each: never a silent fall-back to another verifier.
    """
    doc = _extra(linker).get("verifier_checkpoint")
    if not isinstance(doc, Mapping) or doc.get("verifier_digest") != verifier_digest:
        return None
    name, digest = doc.get("path"), doc.get("digest")
    checkpoint = getattr(getattr(linker, "inner", linker), "checkpoint")  # _extra found it: it has one
    if not isinstance(name, str) or not name or not isinstance(digest, str):
        raise LinkerError("the learned checkpoint's verifier_checkpoint does not name a file and its digest")
    from wikivel_bot.linker.checkpoint import file_digest

    # Relative to the learned checkpoint's own directory (the challenger's in the models directory).
    path = Path(checkpoint.path).parent / name
    if not path.is_file():
        raise LinkerError(f"the verifier tuned for this checkpoint is missing: {path}")
    if file_digest(path) != digest:
        raise LinkerError(f"the verifier tuned for this checkpoint has changed since it was written: {path} "
                          f"(digest {digest[:12]} expected)")
    return path


def learned_evidence_model(linker: Linker) -> Optional[Path]:
    """The evidence model a checkpoint learned from decisions carries beside itself
    (``learning.evidence``: fitted on the reviewers' decisions and judged), or None.

    :raises LinkerError: the record is damaged or the file is missing (one line).
    """
    doc = _extra(linker).get("evidence_model")
    if doc is None:
        return None
    checkpoint = getattr(getattr(linker, "inner", linker), "checkpoint")
    name = doc.get("path") if isinstance(doc, Mapping) else None
    if not isinstance(name, str) or not name:
        raise LinkerError("the learned checkpoint's evidence_model does not name a file")
    path = Path(checkpoint.path).parent / name
    if not path.is_file():
        raise LinkerError(f"the evidence model learned with this checkpoint is missing: {path}")
    return path


class LearnedProbability(LinkerWrapper):
    """The learned linker, whose suggestions carry ``sigmoid(a · cosine + b)``.

    :param inner: a linker with ``label_set`` and ``score_items`` (the CLIP linker).
    :param calibration: Platt's (a, b) from :func:`learned_calibration`.
    """

    def __init__(self, inner: Linker, calibration: Tuple[float, float]) -> None:
        super().__init__(inner)
        self.calibration = calibration

    def probabilities(self, queries: Sequence[Any], medias: Sequence[MediaFile],
                      qids: Sequence[Sequence[str]]) -> List[Dict[str, float]]:
        """Per file, the probability of each suggested item of the label set (rounded to 4
        places, as the verifier's); items outside the label set get none."""
        label_set = getattr(self.inner, "label_set", None)
        if label_set is None:  # not attached: nothing to score against
            return [{} for _ in qids]
        positions = [[(q, label_set.index_of(q)) for q in row] for row in qids]
        kept = [[(q, p) for q, p in row if p is not None] for row in positions]
        scores = getattr(self.inner, "score_items")(queries, [[p for _, p in row] for row in kept])
        # The one Platt map (its sigmoid holds for any slope a steep fit gives).
        platt = Calibration("platt", a=self.calibration[0], b=self.calibration[1])
        return [{q: round(platt.probability(s), 4) for (q, _), s in zip(row, values)}
                for row, values in zip(kept, scores)]
