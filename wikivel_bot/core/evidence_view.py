"""A suggestion's evidence as every view shows it: the one reading of ``Candidate.evidence``.

The linker stores a candidate's evidence in its JSON (``wikivel_bot.core.evidence``):
``sources`` (a list of :meth:`Evidence.as_dict <wikivel_bot.core.evidence.Evidence.as_dict>`),
``evidence_kind`` (a report bucket), ``visual_score`` and ``in_label_set``. ``suggest``, the
exports, the terminal and web reviews and the live-evaluation report all read it through
:func:`shown_evidence`, so they say the same words: "image only" when the file's page gave
no evidence, else the texts (``Category:Eiffel Tower → Q243``).

Rows queued before evidence existed have none of these keys: they read as "image only".
A pair a reviewer added by hand (``review approve --item`` on an item never suggested, an
imported decision) was never linked: its row holds only ``{"source": "added by reviewer"}``
(``queue.store.decisions``), no score and no evidence, and reads as "added by hand", never
"image only", which would claim the linker saw it in the picture.
A stored source that does not parse (a hand-edited row, a future kind) is left out rather
than failing a whole review page. Standard library only.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, List, Mapping, Optional, Tuple

from wikivel_bot.core.evidence import BUCKET_IMAGE_ONLY, BUCKETS, Evidence, kind_bucket

IMAGE_ONLY = BUCKET_IMAGE_ONLY
# The kind (and the words) of a pair no linker suggested: a reviewer added it. Not one of
# the report buckets (core.evidence.BUCKETS): those sort the linker's own suggestions.
ADDED_BY_HAND = "added by hand"
# What the queue stores as the evidence of such a pair (queue.store.decisions).
HAND_MARK = {"source": "added by reviewer"}
# Between two evidence texts on one line (a table cell, a CSV cell).
SEPARATOR = "; "
# Said of an item the linker fetched for this file because evidence named it.
OUTSIDE_LABEL_SET = "not in the label set"


@dataclass(frozen=True)
class ShownEvidence:
    """What a reviewer is told about why an item was suggested.

    :param kind: the report bucket: ``image only``, ``category``, ``category label``,
        ``link``, ``identifier`` or ``several`` (:data:`wikivel_bot.core.evidence.BUCKETS`);
        ``added by hand`` (:data:`ADDED_BY_HAND`) for a pair a reviewer added, not the linker.
    :param sources: the evidence, in the order stored.
    :param visual_score: the image's score for the item, when the linker stored one.
    :param in_label_set: False for an item fetched on the fly because evidence named it;
        None when not stored (rows from before evidence).
    """

    kind: str = IMAGE_ONLY
    sources: Tuple[Evidence, ...] = ()
    visual_score: Optional[float] = None
    in_label_set: Optional[bool] = None

    @property
    def texts(self) -> Tuple[str, ...]:
        """Each source in words: ``Category:Eiffel Tower → Q243``."""
        return tuple(ev.describe() for ev in self.sources)

    def why(self) -> str:
        """One line: ``image only``, or the evidence texts joined by ``; ``; an item outside
        the label set says so."""
        text = SEPARATOR.join(self.texts) or (ADDED_BY_HAND if self.kind == ADDED_BY_HAND else IMAGE_ONLY)
        return text + (f" ({OUTSIDE_LABEL_SET})" if self.in_label_set is False else "")

    def as_json(self) -> Dict[str, Any]:
        """``{"evidence_kind", "sources", "visual_score", "in_label_set"}`` for JSON outputs
        (``sources`` as stored: kind, source, qid, text); unknown values are None."""
        return {
            "evidence_kind": self.kind,
            "sources": [ev.as_dict() for ev in self.sources],
            "visual_score": self.visual_score,
            "in_label_set": self.in_label_set,
        }


def shown_evidence(evidence: Optional[Mapping[str, Any]]) -> ShownEvidence:
    """Read a candidate's stored evidence (``Candidate.evidence``, the queue row's JSON).

    :param evidence: the mapping, or None/anything else for a row without one.
    :returns: "added by hand" for a pair a reviewer added (:data:`HAND_MARK`); "image
        only" with no sources for other rows without evidence keys. The kind is
        recomputed from the sources when there are any (so it always agrees with the texts);
        without sources a stored kind is kept when it is one of the buckets.
    """
    if not isinstance(evidence, Mapping):
        return ShownEvidence()
    sources = _sources(evidence.get("sources"))
    if not sources and evidence.get("source") == HAND_MARK["source"]:
        return ShownEvidence(kind=ADDED_BY_HAND)
    stored = evidence.get("evidence_kind")
    if sources:
        kind = kind_bucket(sources)
    else:
        kind = stored if isinstance(stored, str) and stored in BUCKETS else IMAGE_ONLY
    in_label_set = evidence.get("in_label_set")
    return ShownEvidence(
        kind=kind, sources=sources, visual_score=_number(evidence.get("visual_score")),
        in_label_set=in_label_set if isinstance(in_label_set, bool) else None,
    )


def _sources(stored: Any) -> Tuple[Evidence, ...]:
    if not isinstance(stored, (list, tuple)):
        return ()
    out: List[Evidence] = []
    for doc in stored:
        if not isinstance(doc, Mapping):
            continue
        try:
            ev = Evidence.from_dict(doc)
        except ValueError:  # malformed or unknown: shown without it, never a crash
            continue
        if ev not in out:
            out.append(ev)
    return tuple(out)


def _number(value: Any) -> Optional[float]:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None
