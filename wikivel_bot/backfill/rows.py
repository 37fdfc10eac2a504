"""The rows that flow through the backfill, and the counters that summarise a run.

Every source title becomes one row that travels through all stages; a stage that settles a
row (skipped, ineligible, unavailable, deferred, linked) sets ``outcome`` and ``reason`` and
the later stages pass it along untouched, so the end of the pipeline counts every title read
exactly once — the counters of a pywikibot bot, across a cluster.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Sequence

from wikivel_bot.core.safety import rule_count
from wikivel_bot.types import Candidate, Depiction, MediaFile

# Outcomes. PENDING rows are still being worked on.
PENDING = ""
SKIPPED = "skipped"
INELIGIBLE = "ineligible"
UNAVAILABLE = "unavailable"
DEFERRED = "deferred"
LINKED = "linked"

# Row columns and their Arrow types (``pipeline`` builds the schema from this).
COLUMNS = {
    "title": "string", "page_id": "int64", "file_id": "int64", "state": "string",
    "outcome": "string", "reason": "string", "media": "string", "rejected": "string",
    "data": "binary", "width": "int32", "height": "int32", "pixels": "binary",
    "candidates": "string", "withheld": "string",
}


def new_row(title: str) -> Dict[str, Any]:
    """A row for one source title, nothing known yet."""
    return {"title": title, "page_id": 0, "file_id": 0, "state": "", "outcome": PENDING,
            "reason": "", "media": "", "rejected": "[]", "data": b"", "width": 0, "height": 0,
            "pixels": b"", "candidates": "", "withheld": ""}


def settle(row: Dict[str, Any], outcome: str, reason: str = "") -> Dict[str, Any]:
    """Give ``row`` its outcome and drop the heavy columns it no longer needs."""
    row.update(outcome=outcome, reason=reason, data=b"", pixels=b"")
    return row


def media_to_text(media: MediaFile) -> str:
    return json.dumps({
        "page_id": media.page_id, "title": media.title, "thumb_url": media.thumb_url,
        "description": media.description, "categories": list(media.categories),
        "depicts": [[d.qid, d.rank] for d in media.depicts], "revid": media.revid,
        "protected": media.protected, "bots_allowed": media.bots_allowed,
        "references": list(media.references),
    })


def media_from_text(text: str) -> MediaFile:
    doc = json.loads(text)
    return MediaFile(
        page_id=int(doc["page_id"]), title=doc["title"], thumb_url=doc["thumb_url"],
        description=doc["description"], categories=tuple(doc["categories"]),
        depicts=tuple(Depiction(q, r) for q, r in doc["depicts"]), revid=int(doc["revid"]),
        protected=bool(doc["protected"]), bots_allowed=bool(doc["bots_allowed"]),
        references=tuple(doc.get("references", ())),
    )


def candidates_to_text(found: Sequence[Candidate]) -> str:
    return json.dumps([
        {"qid": c.qid, "score": c.score, "rank": c.rank, "linker": c.linker,
         "linker_version": c.linker_version, "labelset_hash": c.labelset_hash,
         "evidence": dict(c.evidence)}
        for c in found
    ])


def candidates_from_text(text: str) -> List[Candidate]:
    return [Candidate(**doc) for doc in json.loads(text or "[]")]


@dataclass
class BackfillCounters:
    """What a run did: every title read ends in exactly one of the other counters."""

    read: int = 0
    skipped: Counter = field(default_factory=Counter)
    ineligible: Counter = field(default_factory=Counter)
    unavailable: Counter = field(default_factory=Counter)
    deferred: int = 0
    linked: int = 0
    candidates: int = 0
    # Suggestions the safety rules withheld, by rule (as the daemon's link counters).
    withheld: Counter = field(default_factory=Counter)

    def count(self, row: Mapping[str, Any], saved: int = 0) -> None:
        """Count one finished row (``saved``: candidates the queue took for it)."""
        from wikivel_bot.commons.filters import reason_kind

        self.read += 1
        outcome = row["outcome"]
        kind = reason_kind(row["reason"]) if row["reason"] else "unknown"
        if outcome == LINKED:
            from wikivel_bot.pipeline import withheld_counts

            self.linked += 1
            self.candidates += saved
            self.withheld.update(withheld_counts(withheld_from_text(row.get("withheld"))))
        elif outcome == SKIPPED:
            self.skipped[kind] += 1
        elif outcome == INELIGIBLE:
            self.ineligible[kind] += 1
        elif outcome == UNAVAILABLE:
            self.unavailable[kind] += 1
        else:
            self.deferred += 1

    @property
    def settled(self) -> int:
        return (self.linked + self.deferred + sum(self.skipped.values())
                + sum(self.ineligible.values()) + sum(self.unavailable.values()))

    def lines(self) -> List[str]:
        """The summary printed at the end of a run."""
        out = [f"{self.read} files read"]
        for name, counts in (("skipped", self.skipped), ("ineligible", self.ineligible),
                             ("unavailable", self.unavailable)):
            out.append(f"{sum(counts.values())} {name}")
            out += [f"    {n} {kind}" for kind, n in sorted(counts.items()) if n]
        out.append(f"{self.linked} linked")
        out.append(f"{self.candidates} candidates proposed")
        if self.withheld:
            out.append(f"{sum(self.withheld.values())} suggestions withheld by the safety rules")
            out += [f"    {rule_count(n, rule)}" for rule, n in sorted(self.withheld.items()) if n]
        out.append(f"{self.deferred} deferred (the next run tries them again)")
        return out

    def as_dict(self) -> Dict[str, Any]:
        return {"read": self.read, "skipped": dict(self.skipped), "ineligible": dict(self.ineligible),
                "unavailable": dict(self.unavailable), "deferred": self.deferred,
                "linked": self.linked, "candidates": self.candidates, "withheld": dict(self.withheld)}


def withheld_from_text(text: Optional[str]) -> Any:
    """A row's ``withheld`` column (``pipeline.withheld_record`` as JSON) back as the record."""
    return json.loads(text or "[]")


def rejected_from_text(text: Optional[str]) -> List[str]:
    return list(json.loads(text or "[]"))
