"""Human decisions → training records, one per file (docs/learning.md, "Decisions as a dataset").

Which decisions count, and why:

* only a reviewer's approve, approve-prominent and reject, from a human source (terminal,
  cli, import, web): skips say nothing about the pair, and neither dry runs nor the bot's
  own write outcomes ever enter ``decisions`` (they are ``edits`` rows) — so the learner never
  sees its own unreviewed suggestions as labels;
* the newest decision per (file, item): an earlier one that another decision replaced (a
  change of mind, an operator's override) is dropped; an undone decision is deleted by the
  undo, so it never reaches here;
* and only while the pair still stands as decided: an approval whose statement was reverted
  on the wiki, or a decision the pair no longer reflects, is dropped;
* decisions of excluded reviewers are left out, and each reviewer keeps at most
  ``reviewer_cap`` decisions (the newest), so one prolific reviewer cannot define the model.

A record holds the file (title, upload time, thumbnail URL, image path once fetched, text),
the candidates it was shown with (score, rank, label, description, evidence, and the values the
evidence model is served: ``served``), its positives
(approved items; ``prominent`` the subset approved as prominent) and its hard negatives (the
rejected items), and who decided each.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from dataclasses import asdict, dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

from wikivel_bot.core.timestamps import format_timestamp
from wikivel_bot.errors import UsageError
from wikivel_bot.queue.learning_queries import DecisionRow, ShownFile
from wikivel_bot.types import CandidateState, DecisionAction

# Where decisions come from when a person made them (decisions.source).
HUMAN_SOURCES = frozenset({"terminal", "cli", "import", "web"})
POSITIVE = frozenset({DecisionAction.APPROVE.value, DecisionAction.APPROVE_PROMINENT.value})
NEGATIVE = frozenset({DecisionAction.REJECT.value})
# The states an approval may have reached and still stand (a write that was skipped or failed
# does not make the reviewer wrong).
APPROVAL_STANDS = frozenset({CandidateState.APPROVED.value, CandidateState.WRITTEN.value,
                             CandidateState.WRITE_SKIPPED.value, CandidateState.WRITE_FAILED.value})


@dataclass(frozen=True)
class Record:
    """One file's decisions as a training example (see the module docstring)."""

    page_id: int
    title: str
    uploaded_at: str
    thumb_url: str
    description: str
    categories: Tuple[str, ...]
    shown: Tuple[Mapping[str, Any], ...]
    positives: Tuple[str, ...]
    negatives: Tuple[str, ...]
    prominent: Tuple[str, ...] = ()
    reviewers: Mapping[str, str] = field(default_factory=dict)
    decided_at: Mapping[str, str] = field(default_factory=dict)
    image: str = ""
    split: str = ""

    def as_json(self) -> Dict[str, Any]:
        doc = asdict(self)
        doc["categories"], doc["shown"] = list(self.categories), [dict(s) for s in self.shown]
        return doc

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> "Record":
        return cls(
            page_id=int(doc["page_id"]), title=str(doc["title"]), uploaded_at=str(doc.get("uploaded_at", "")),
            thumb_url=str(doc.get("thumb_url", "")), description=str(doc.get("description", "")),
            categories=tuple(doc.get("categories", ())), shown=tuple(doc.get("shown", ())),
            positives=tuple(doc.get("positives", ())), negatives=tuple(doc.get("negatives", ())),
            prominent=tuple(doc.get("prominent", ())), reviewers=dict(doc.get("reviewers", {})),
            decided_at=dict(doc.get("decided_at", {})), image=str(doc.get("image", "")),
            split=str(doc.get("split", "")),
        )


@dataclass
class Summary:
    """What was kept and what was left out, and why (printed by the command, in card.json)."""

    decisions: int = 0
    kept: int = 0
    dropped: Counter = field(default_factory=Counter)
    per_reviewer: Counter = field(default_factory=Counter)

    def as_json(self) -> Dict[str, Any]:
        return {"decisions": self.decisions, "kept": self.kept, "dropped": dict(sorted(self.dropped.items())),
                "per_reviewer": dict(sorted(self.per_reviewer.items()))}


def counted_decisions(rows: Sequence[DecisionRow], *, reviewer_cap: int = 0,
                      exclude: Iterable[str] = (), summary: Optional[Summary] = None) -> List[DecisionRow]:
    """The decisions that become labels (module docstring), oldest first.

    :param rows: every decision row (``queue.learning_queries.decision_rows``).
    :param reviewer_cap: most decisions kept per reviewer, the newest; 0 = no cap.
    :param exclude: reviewers whose decisions are left out.
    """
    summary = summary if summary is not None else Summary()
    summary.decisions += len(rows)
    excluded = {name.strip() for name in exclude if name.strip()}
    newest: Dict[Tuple[int, str], DecisionRow] = {}
    for row in rows:
        if row.action not in POSITIVE | NEGATIVE:
            summary.dropped["skip" if row.action == DecisionAction.SKIP.value else "not a decision"] += 1
        elif row.source not in HUMAN_SOURCES:
            summary.dropped["not from a person"] += 1
        else:
            key = (row.page_id, row.qid)
            if key in newest:
                summary.dropped["replaced by a later decision"] += 1
            if key not in newest or row.decision_id > newest[key].decision_id:
                newest[key] = row
    standing = []
    for row in sorted(newest.values(), key=lambda r: r.decision_id):
        if row.action in POSITIVE and row.state == CandidateState.REVERTED.value:
            summary.dropped["statement reverted"] += 1
        elif (row.action in POSITIVE and row.state not in APPROVAL_STANDS) or (
                row.action in NEGATIVE and row.state != CandidateState.REJECTED.value):
            summary.dropped["no longer as decided"] += 1
        elif row.reviewer in excluded:
            summary.dropped["excluded reviewer"] += 1
        else:
            standing.append(row)
    by_reviewer: Dict[str, List[DecisionRow]] = defaultdict(list)
    for row in standing:
        by_reviewer[row.reviewer].append(row)
    kept: List[DecisionRow] = []
    for reviewer, own in by_reviewer.items():
        if reviewer_cap and len(own) > reviewer_cap:
            summary.dropped["over the reviewer cap"] += len(own) - reviewer_cap
            own = own[-reviewer_cap:]
        kept.extend(own)
    kept.sort(key=lambda r: r.decision_id)
    summary.kept += len(kept)
    summary.per_reviewer.update(r.reviewer for r in kept)
    return kept


def build_records(kept: Sequence[DecisionRow], shown: Mapping[int, ShownFile]) -> List[Record]:
    """One record per decided file, in upload order (then page id)."""
    by_file: Dict[int, List[DecisionRow]] = defaultdict(list)
    for row in kept:
        by_file[row.page_id].append(row)
    records = []
    for page_id, rows in by_file.items():
        seen = shown.get(page_id)
        media: Mapping[str, Any] = seen.media if seen else {}
        records.append(Record(
            page_id=page_id, title=rows[0].title, uploaded_at=_iso(rows[0].uploaded_at),
            thumb_url=str(media.get("thumb_url", "")), description=str(media.get("description", "")),
            categories=tuple(media.get("categories", ())),
            shown=tuple(_shown_entry(c) for c in (seen.candidates if seen else ())),
            positives=tuple(r.qid for r in rows if r.action in POSITIVE),
            negatives=tuple(r.qid for r in rows if r.action in NEGATIVE),
            prominent=tuple(r.qid for r in rows if r.action == DecisionAction.APPROVE_PROMINENT.value),
            reviewers={r.qid: r.reviewer for r in rows}, decided_at={r.qid: _iso(r.decided_at) for r in rows},
        ))
    records.sort(key=lambda r: (r.uploaded_at, r.page_id))
    return records


def write_records(path: Path, records: Iterable[Record]) -> int:
    path.parent.mkdir(parents=True, exist_ok=True)
    n = 0
    with path.open("w", encoding="utf-8") as out:
        for record in records:
            out.write(json.dumps(record.as_json(), ensure_ascii=False, sort_keys=True) + "\n")
            n += 1
    return n


def read_records(path: Path) -> List[Record]:
    """:raises UsageError: a missing or damaged records file, in one line."""
    if not path.is_file():
        raise UsageError(f"no decision records at {path} (run `wikivel-bot dataset from-decisions` first)")
    records = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if line.strip():
            try:
                records.append(Record.from_json(json.loads(line)))
            except (ValueError, KeyError, TypeError) as exc:
                raise UsageError(f"{path}:{number}: not a decision record ({exc})") from None
    return records


# What the linker stored of each candidate for the evidence model (``evidence_model.served_features``):
# kept in the record so a round can fit that model on exactly the values it is served.
SERVED = ("visual_score", "best_visual_score", "image_rank", "in_label_set")


def _shown_entry(candidate: Mapping[str, Any]) -> Dict[str, Any]:
    evidence = candidate.get("evidence") or {}
    entry = {"qid": candidate["qid"], "score": candidate.get("score"), "rank": candidate.get("rank"),
             "label": str(evidence.get("label", "")), "description": str(evidence.get("description", "")),
             "linker_version": candidate.get("linker_version", ""),
             "evidence": [dict(s) for s in evidence.get("sources", ()) if isinstance(s, Mapping)]}
    if all(evidence.get(key) is not None for key in SERVED[:2]):
        entry["served"] = {key: evidence.get(key) for key in SERVED}
    return entry


def _iso(value: Optional[datetime]) -> str:
    return format_timestamp(value) if value is not None else ""
