"""The audit trail as people and scripts read it: who decided what, what was written when.

The events come from ``queue.reviews.audit_events`` (decisions and write attempts merged,
oldest first); this module only formats them.
"""

from __future__ import annotations

from collections import Counter
from typing import Dict, List, Optional, Sequence

from wikivel_bot.queue.reviews import AuditEvent
from wikivel_bot.review.item_labels import LabelOf, with_label
from wikivel_bot.types import mid_of

# The item column: "Q146 (house cat)", cut beyond this many characters.
ITEM_WIDTH = 30


def audit_record(event: AuditEvent, label_of: Optional[LabelOf] = None) -> Dict[str, object]:
    """One event as a JSON-ready dict (times in ISO 8601 UTC with ``Z``).

    :param label_of: qid -> label; with it the record has a ``label`` too.
    """
    record: Dict[str, object] = {
        "time": event.at.isoformat(timespec="seconds") + "Z",
        "kind": event.kind,
        "mid": mid_of(event.page_id),
        "title": event.title,
        "qid": event.qid,
        "action": event.action,
        "state_now": event.state,
    }
    if label_of is not None:
        record["label"] = label_of(event.qid)
    if event.kind == "decision":
        record.update(reviewer=event.who, source=event.source)
        if event.overrode:
            record["overrode"] = event.overrode  # an operator's override of this reviewer
    else:
        record.update(
            batch=event.batch_id, revid=event.revid, statement_id=event.statement_id or None,
            error=event.error or None, attempt=event.attempt,
        )
    return record


def audit_lines(events: Sequence[AuditEvent], label_of: Optional[LabelOf] = None) -> List[str]:
    """A table, one event per line, then a summary line.

    Items read "Q146 (house cat)" when ``label_of`` knows the label. Decisions read
    "approve_prominent by Ann (terminal)" (an operator's override adds ", override of
    Bob's decision"); write attempts read "written in batch B,
    revision 99" with the statement id or the error.
    """
    lines = [f"{'time (UTC)':<20} {'file':<10} {'item':<{ITEM_WIDTH}} {'event':<18} details"]
    for e in events:
        when = e.at.strftime("%Y-%m-%d %H:%M:%S")
        if e.kind == "decision":
            detail = f"by {e.who} ({e.source})"
            if e.overrode:
                detail += f", override of {e.overrode}'s decision"
        else:
            detail = f"batch {e.batch_id}"
            if e.revid is not None:
                detail += f", revision {e.revid}"
            if e.statement_id:
                detail += f", statement {e.statement_id}"
            if e.error:
                detail += f", {' '.join(e.error.split())}"
            if e.attempt > 1:
                detail += f", attempt {e.attempt}"
        item = with_label(e.qid, label_of)
        if len(item) > ITEM_WIDTH:
            item = item[: ITEM_WIDTH - 2] + "…)"
        lines.append(f"{when:<20} {mid_of(e.page_id):<10} {item:<{ITEM_WIDTH}} {e.action:<18} {detail}")
    lines.append(audit_summary(events))
    return lines


def audit_summary(events: Sequence[AuditEvent]) -> str:
    """``N decisions (approve 2, reject 1); M write attempts (written 2, failed 1)``."""
    decided = Counter(e.action for e in events if e.kind == "decision")
    tried = Counter(e.action for e in events if e.kind == "edit")

    def part(counter: Counter, noun: str) -> str:
        total = sum(counter.values())
        detail = ", ".join(f"{k} {v}" for k, v in sorted(counter.items()))
        return f"{total} {noun}{'s' if total != 1 else ''}" + (f" ({detail})" if detail else "")

    return f"{part(decided, 'decision')}; {part(tried, 'write attempt')}"
