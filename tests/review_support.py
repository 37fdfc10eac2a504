"""Building review queues for the review, export, import and audit tests.

Files go through the store's real path (enqueue, claim, fetch, link), so the rows look like
what the daemon leaves behind; labels and descriptions sit in the candidates' evidence the
way ``linker.link`` writes them.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Dict, Iterable, Mapping, Sequence, Tuple

from sqlalchemy import select

from wikivel_bot.queue.store import Store
from wikivel_bot.queue.tables import candidates, decisions, files
from wikivel_bot.types import Candidate, Depiction, MediaFile, Upload

T0 = datetime(2026, 11, 1, 12, 0, 0, tzinfo=timezone.utc)

# (qid, score, label, description)
Item = Tuple[str, float, str, str]

CAT = ("Q146", 0.91, "house cat", "domesticated feline")
DOG = ("Q144", 0.82, "dog", "domestic animal")
HUMAN = ("Q5", 0.73, "human", "species of hominid")
TABBY = ("Q1050479", 0.64, "tabby cat", "cat with a striped coat")
PARK = ("Q22698", 0.55, "park", "area of open space")


def add_file(
    store: Store,
    page_id: int,
    items: Iterable[Item],
    *,
    title: str = "",
    uploader: str = "Alice",
    day: int = 0,
    categories: Sequence[str] = ("Cats in Berlin",),
    description: str = "A cat on a sofa",
    depicts: Sequence[Depiction] = (),
    linker: str = "zero-shot",
    notes: Sequence[str] = (),
    sources: Sequence[Mapping[str, str]] = (),
) -> int:
    """Enqueue, fetch and link one file with the given candidates; returns its row id.

    :param sources: the file's evidence (``Evidence.as_dict()`` each): each candidate stores
        those naming its item, as the linker stores them."""
    title = title or f"File:Example {page_id}.jpg"
    store.enqueue([Upload(page_id=page_id, title=title, timestamp=T0 + timedelta(days=day), uploader=uploader,
                          log_id=1000 + page_id, mime="image/jpeg", width=800, height=600)])
    file_id = store.file_id_of(page_id)
    thumb = f"https://upload.wikimedia.org/thumb/{page_id}/330px-x.jpg"
    store.mark_fetched(file_id, MediaFile(page_id=page_id, title=title, thumb_url=thumb, description=description,
                                          categories=tuple(categories), depicts=tuple(depicts), revid=7))
    store.save_candidates(file_id, [
        Candidate(qid=q, score=s, rank=i + 1, linker=linker, linker_version="1", labelset_hash="h" * 16,
                  evidence={"label": label, "description": text, "notes": list(notes),
                            **({"sources": [dict(e) for e in sources if e["qid"] == q]} if sources else {})})
        for i, (q, s, label, text) in enumerate(items)
    ])
    return file_id


def pair_states(store: Store) -> Dict[Tuple[int, str], Tuple[str, int]]:
    """{(page id, qid): (state, prominent)} for every pair in the queue."""
    query = select(files.c.page_id, candidates.c.qid, candidates.c.state, candidates.c.prominent).join(
        files, files.c.id == candidates.c.file_id
    )
    with store.engine.connect() as conn:
        return {(r.page_id, r.qid): (r.state, int(r.prominent)) for r in conn.execute(query)}


def decision_rows(store: Store) -> list:
    """(page id, qid, action, reviewer, source) of every recorded decision, oldest first."""
    query = (
        select(files.c.page_id, candidates.c.qid, decisions.c.action, decisions.c.reviewer, decisions.c.source)
        .join(candidates, candidates.c.id == decisions.c.candidate_id)
        .join(files, files.c.id == candidates.c.file_id)
        .order_by(decisions.c.id)
    )
    with store.engine.connect() as conn:
        return [tuple(r) for r in conn.execute(query)]
