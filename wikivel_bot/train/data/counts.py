"""Counts a dataset keeps beside its manifest (pure: pyarrow and the standard library).

* ``train_counts.json``: files per ground-truth item in the train split *after* promotion,
  the frequencies of the random and top-k baselines (§4.4: "probability equal to their
  frequency in the train split"; "the most frequent ones in the train split");
* the card's ``counted_on``: where the label set's f was counted, and whether that is
  exactly the dataset's training split (§3.2: "depicted fewer than f times in the training
  split").
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any, Dict, Sequence

import pyarrow as pa

TRAIN_COUNTS = "train_counts.json"


def counted_on_card(label_set: Any, train_pages: Sequence[int]) -> Dict[str, Any]:
    """What the card says about the label set's counts: where they were counted, and whether
    that is exactly this dataset's training split (as the paper does, §3.2)."""
    from wikivel_bot.labels.build import page_ids_digest

    counted = dict(getattr(label_set, "manifest", {}).get("counted_on") or {})
    same = counted.get("kind") == "files" and counted.get("sha256") == page_ids_digest(train_pages)
    return {"counted_on": counted, "counted_on_train_split": bool(same)}


def train_counts(table: pa.Table) -> Dict[str, int]:
    """Files per ground-truth item in the train split (items after promotion), most first."""
    counter: Counter = Counter()
    for split, items in zip(table.column("split").to_pylist(), table.column("items").to_pylist()):
        if split == "train":
            counter.update(set(items))
    return dict(sorted(counter.items(), key=lambda kv: (-kv[1], kv[0])))


def write_train_counts(out_dir: Path, table: pa.Table) -> Path:
    """Store :func:`train_counts` with the dataset (read by the frequency baselines)."""
    path = Path(out_dir) / TRAIN_COUNTS
    data = {"split": "train", "after_promotion": True, "counts": train_counts(table)}
    path.write_text(json.dumps(data, ensure_ascii=False) + "\n", encoding="utf-8")
    return path
