"""Item labels the queue already knows: those the linker stored with its candidates.

Audit lines and exports show a label beside each QID; a pair the linker proposed carries its
label in the candidate's evidence, so no request to Wikidata is needed for it.
"""

from __future__ import annotations

from typing import Dict, Iterable

from sqlalchemy import select

from wikivel_bot.queue.store import Store
from wikivel_bot.queue.tables import candidates

# Bound parameters per query stay well below every backend's limit.
_CHUNK = 500


def stored_labels(store: Store, qids: Iterable[str]) -> Dict[str, str]:
    """{qid: label} for the items among ``qids`` that some candidate stored a label for."""
    wanted = sorted(set(qids))
    found: Dict[str, str] = {}
    with store.transaction() as conn:
        for start in range(0, len(wanted), _CHUNK):
            chunk = wanted[start:start + _CHUNK]
            rows = conn.execute(select(candidates.c.qid, candidates.c.evidence).where(candidates.c.qid.in_(chunk)))
            for qid, evidence in rows:
                label = evidence.get("label") if isinstance(evidence, dict) else None
                if label and qid not in found:
                    found[qid] = str(label)
    return found
