"""Queue values as the API answers them and the templates show them (plain dicts).

One shape for both, so the page and a gadget using the API see the same evidence. Every
string here is data from the wiki or Wikidata: templates autoescape it, and the API sends
it as JSON (``application/json``, never HTML).
"""

from __future__ import annotations

from typing import Any, Dict, List, Mapping, Optional

from wikivel_bot.core.review_rules import (
    ReviewCandidate, ReviewFile, file_page_url, format_signals, state_text, unsettled_text,
)
from wikivel_bot.core.safety import rule_count
from wikivel_bot.types import CandidateState
from wikivel_bot.web.items import ShownItem


def calibration_view(cand: ReviewCandidate, thresholds: Any) -> Optional[Dict[str, Any]]:
    """What the calibrated thresholds (``linker.calibrated``) say of this suggestion.

    None when no thresholds are configured or the linker was not calibrated; else whether
    the score reaches the linker's threshold and the precision that threshold had on the
    held-out files (what "calibrated" promises: a measured precision, not a per-pair
    probability).
    """
    entry = thresholds.linkers.get(cand.linker) if thresholds is not None else None
    if entry is None:
        return None
    held_out = entry.info.get("held_out") if isinstance(entry.info, Mapping) else None
    precision = held_out.get("precision") if isinstance(held_out, Mapping) else None
    passes = entry.threshold is not None and cand.score is not None and cand.score >= entry.threshold
    return {"threshold": entry.threshold, "passes": passes, "target": thresholds.target,
            "held_out_precision": precision}


def candidate_view(cand: ReviewCandidate, info: Optional[ShownItem], thresholds: Any = None) -> Dict[str, Any]:
    """A candidate with its item in the reviewer's language (the linker's text as fallback)."""
    return {
        "item": cand.qid,
        "label": (info.label if info and info.label else cand.label) or cand.qid,
        "description": (info.description if info and info.description else cand.description),
        # The languages the texts are in ("" for the linker's own text, whose language the
        # queue does not record): the page marks them so screen readers read them right.
        "label_lang": info.lang if info and info.label else "",
        "description_lang": info.description_lang if info and info.description else "",
        "image": info.image_thumb if info else "",
        "image_title": info.image_title if info else "",
        "score": None if cand.score is None else round(float(cand.score), 4),
        "rank": cand.rank,
        "linker": cand.linker,
        "state": cand.state.value,
        "prominent": cand.prominent,
        "reviewer": cand.reviewer or None,
        # The state in words: who decided, and that the bot account made the edit.
        "status": "; ".join(t for t in (
            "" if cand.state is CandidateState.PROPOSED else state_text(cand.state, cand.reviewer or "",
                                                                         cand.prominent),
            unsettled_text(cand.unsettled_since)) if t),
        # An edit sent for it whose answer never came (commons.writer.unsettled), or None.
        "unsettled_since": (cand.unsettled_since.isoformat() + "Z") if cand.unsettled_since else None,
        "reasons": list(cand.notes),
        "random_weights": cand.random_weights,
        "item_url": f"https://www.wikidata.org/wiki/{cand.qid}",
        "calibrated": calibration_view(cand, thresholds),
        # The cascade's signals: the image's share α of the file side, and the
        # verifier's calibrated match probability; None for linkers without them.
        "alpha": cand.alpha,
        "probability": cand.probability,
        "signals": format_signals(cand.alpha, cand.probability),
        # Why it was suggested: "image only" or the file's own evidence, each source with its
        # text ("Category:Eiffel Tower → Q243"); the same words as suggest and the exports.
        "why": cand.evidence.why(),
        **cand.evidence.as_json(),
    }


def file_view(f: ReviewFile, items: Mapping[str, ShownItem], api_url: str = "", site_name: str = "commons",
              thresholds: Any = None) -> Dict[str, Any]:
    """A file with its description, categories, present depicts and candidates."""
    return {
        "file": f.mid,
        "file_id": f.file_id,
        "title": f.title,
        "url": file_page_url(f.title, api_url, site_name),
        "thumb": f.thumb_url,
        "uploader": f.uploader,
        "uploaded_at": f.uploaded_at.isoformat() + "Z" if f.uploaded_at else None,
        "description": f.description,
        "categories": list(f.categories),
        "depicts": depicts_view(f, items),
        "candidates": [candidate_view(c, items.get(c.qid), thresholds) for c in f.candidates],
        # What the safety rules chose not to suggest for this file, by rule: the reviewer
        # sees that the bot withheld something, not what (no named person leaks).
        "withheld": f.withheld_by_rule(),
        # The same counts in words for the page ("27 named people").
        "withheld_counts": [rule_count(n, rule) for rule, n in sorted(f.withheld_by_rule().items())],
    }


def depicts_view(f: ReviewFile, items: Mapping[str, ShownItem]) -> List[Dict[str, Any]]:
    """What the file depicts now: the statements read when it was fetched, and the ones the
    bot wrote since (``by_bot``), which that reading predates; "Depicts now" would otherwise
    miss the bot's own edits until the file is fetched again."""
    shown = [{"item": d.qid, "label": (items[d.qid].label if d.qid in items else "") or d.qid,
              "label_lang": items[d.qid].lang if d.qid in items and items[d.qid].label else "",
              "prominent": d.rank == "preferred", "by_bot": False} for d in f.depicts]
    present = {d.qid for d in f.depicts}
    for c in f.candidates:
        if c.state is CandidateState.WRITTEN and c.qid not in present:
            info = items.get(c.qid)
            shown.append({"item": c.qid, "label": (info.label if info and info.label else c.label) or c.qid,
                          "label_lang": info.lang if info and info.label else "",
                          "prominent": c.prominent, "by_bot": True})
    return shown
