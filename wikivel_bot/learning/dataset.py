"""``dataset from-decisions``: the queue's human decisions written as a training dataset.

A directory::

    records.jsonl   one record per decided file (learning.records.Record), with its split
    card.json       counts: decisions read, kept, dropped by reason, per reviewer, per split
    images/         M<page id>.jpg: the file's thumbnail, fetched once and reused

Images already in ``images/`` (this directory is the thumbnail cache) are not fetched again;
the rest are fetched through the caller's ``fetch`` (the bot's polite ``ThumbnailClient``).
A file whose image cannot be had keeps its record without an image (counted); training
leaves it out.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Tuple

from wikivel_bot.errors import WikivelError
from wikivel_bot.learning.records import Record, Summary, build_records, counted_decisions, write_records
from wikivel_bot.learning.splits import DEFAULT_SHARES, assign_splits, by_split
from wikivel_bot.queue.learning_queries import decision_rows, shown_files

RECORDS = "records.jsonl"
CARD = "card.json"
IMAGES = "images"


@dataclass(frozen=True)
class Built:
    records: List[Record]
    card: Dict[str, Any]
    out_dir: Path


def build_from_decisions(store: Any, out_dir: Path, *, reviewer_cap: int = 0, exclude: Tuple[str, ...] = (),
                         shares: Tuple[float, float, float] = DEFAULT_SHARES,
                         fetch: Optional[Callable[[str], bytes]] = None) -> Built:
    """Read the decisions, keep those that count, write the dataset (module docstring).

    :param store: the queue ``Store``.
    :param fetch: thumbnail URL → bytes; None = use only images already in ``out_dir/images``.
    """
    summary = Summary()
    kept = counted_decisions(decision_rows(store), reviewer_cap=reviewer_cap, exclude=exclude, summary=summary)
    shown = shown_files(store, sorted({r.page_id for r in kept}))
    records = assign_splits(build_records(kept, shown), shares)
    images_dir = out_dir / IMAGES
    images_dir.mkdir(parents=True, exist_ok=True)
    fetched, missing = 0, 0
    with_images = []
    for record in records:
        name = f"M{record.page_id}.jpg"
        path = images_dir / name
        if not path.is_file() and fetch is not None and record.thumb_url:
            try:
                path.write_bytes(fetch(record.thumb_url))
                fetched += 1
            except WikivelError:
                pass  # counted as missing below; the record stays, training leaves it out
        if path.is_file():
            record = replace(record, image=f"{IMAGES}/{name}")
        else:
            missing += 1
        with_images.append(record)
    write_records(out_dir / RECORDS, with_images)
    splits = by_split(with_images)
    card = {
        **summary.as_json(),
        "files": len(with_images), "images_fetched": fetched, "images_missing": missing,
        "reviewer_cap": reviewer_cap, "excluded_reviewers": sorted(exclude),
        "splits": {name: {"files": len(rs), "approved": sum(len(r.positives) for r in rs),
                          "rejected": sum(len(r.negatives) for r in rs),
                          "uploaded": [rs[0].uploaded_at, rs[-1].uploaded_at] if rs else []}
                   for name, rs in splits.items()},
    }
    (out_dir / CARD).write_text(json.dumps(card, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return Built(with_images, card, out_dir)
