"""What a suggestion answer says about one file: the one function behind ``suggest --json``
and ``GET /api/suggest``.

Both paths link with the same ``ReadyLinker`` (``linker.build_ready_linker``) and turn each
outcome into JSON here, so the candidates, scores, evidence ("why") and safety outcome a
reviewer sees on a file page are those an operator sees in the terminal (tested for equality
in tests/test_resident_service.py). What the safety rules withheld is counted by rule and
never named, unless the caller passes the named entries (``suggest --show-withheld``, an
operator's local run; the service never does).
"""

from __future__ import annotations

import dataclasses
from typing import Any, Dict, List, Optional, Sequence

from wikivel_bot.core.evidence_view import shown_evidence


def candidate_entry(c: Any) -> Dict[str, Any]:
    """One suggestion: rank, item, texts, score, ranking notes and its evidence ("why")."""
    shown = shown_evidence(c.evidence)
    return {
        "rank": c.rank, "qid": c.qid, "label": c.evidence.get("label", ""),
        "description": c.evidence.get("description", ""), "score": c.score,
        "notes": c.evidence.get("notes", []),
        # Why: "image only" or the file's own evidence (its kind, the sources with their texts).
        "why": shown.why(), **shown.as_json(),
        **({"alpha": c.alpha} if c.alpha is not None else {}),
        **({"probability": c.probability} if c.probability is not None else {}),
    }


def file_entry(outcome: Any, withheld_items: Optional[List[Dict[str, Any]]] = None) -> Dict[str, Any]:
    """One file's outcome (``Linked`` or not) as JSON.

    :param withheld_items: the withheld suggestions named (QID, label, score, reason): only
        for ``suggest --show-withheld``; None names none, and a drop by a safety rule is then
        left out of ``dropped`` too (only counted in ``withheld``).
    """
    entry: Dict[str, Any] = {"title": outcome.media.title}
    if hasattr(outcome, "candidates"):
        show = withheld_items is not None
        entry["ok"] = True
        entry["candidates"] = [candidate_entry(c) for c in outcome.candidates]
        # What a safety rule dropped is named only on request: the rest are ordinary drops.
        entry["dropped"] = [{"qid": d.qid, "score": round(d.score, 6), "reason": d.reason}
                            for d in outcome.ranking.dropped if show or not d.rule]
        entry["withheld"] = outcome.ranking.withheld_by_rule()
        if show:
            entry["withheld_items"] = withheld_items
    else:
        entry["ok"] = False
        entry["reason"] = outcome.reason
    return entry


def document(description: Any, label_set: Any, index: Any, files: Sequence[Dict[str, Any]]) -> Dict[str, Any]:
    """The whole answer: the linker that ranked (version, precision, warnings), the label set,
    the label index and every file's entry."""
    return {
        "linker": dataclasses.asdict(description),
        "random_weights": description.random_weights,
        "warnings": list(description.warnings),
        "label_set": {"hash": label_set.content_hash, "items": len(label_set.qids)},
        "index": {"path": index.path, "reused": index.reused, "notes": list(index.notes)},
        "files": list(files),
    }
