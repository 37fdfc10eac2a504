"""The starter label set shipped with the package, and the script that generates it.

A few hundred commonly depicted items (people, animals, plants, buildings and structures,
vehicles, landscapes, artworks, ...) from ``data/starter_items.tsv`` so that ``suggest`` and
``run`` work before an operator builds a full set from the dumps. Regenerate after editing
the list::

    python -m wikivel_bot.labels.starter

The set has no depicts counts (it was not built from the MediaInfo dump): every listed item
is kept and ``frequency`` is 0 for all of them.
"""

from __future__ import annotations

import sys
from importlib import resources
from pathlib import Path
from typing import Any, Dict, List, Optional

from wikivel_bot.labels.assemble import label_set_from_records
from wikivel_bot.labels.artifact import write_artifact
from wikivel_bot.labels.labelset import LabelSet
from wikivel_bot.labels.lists import default_p31_blocklist

SOURCE = "starter_items.tsv"


def starter_records(text: Optional[str] = None) -> List[Dict[str, Any]]:
    """The records of the source list (``qid, label, description, p31, p279`` per line).

    :param text: the list's text (default: the packaged ``data/starter_items.tsv``).
    :raises ValueError: a line without QID, label and description.
    """
    if text is None:
        text = resources.files("wikivel_bot.labels").joinpath(f"data/{SOURCE}").read_text("utf-8")
    records = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip() or line.startswith("#"):
            continue
        cells = line.split("\t") + ["", ""]
        if len(cells) < 5 or not all(cells[:3]):
            raise ValueError(f"{SOURCE}, line {number}: expected qid, label, description[, p31, p279]")
        qid, label, description, p31, p279 = (cell.strip() for cell in cells[:5])
        records.append({
            "qid": qid, "label": label, "description": description,
            "p31": [q for q in p31.split(",") if q], "p279": [q for q in p279.split(",") if q],
        })
    return records


def build_starter(text: Optional[str] = None) -> LabelSet:
    """The starter set in memory, from the source list."""
    records = starter_records(text)
    label_set = label_set_from_records(
        records, min_freq=0, languages=("en",),
        p31_blocklist=[f"Q{q}" for q in sorted(default_p31_blocklist())],
    )
    label_set.data.manifest["sources"] = [{"kind": "starter-list", "name": SOURCE, "date": None,
                                           "items": len(records)}]
    return label_set


def write_starter(out_dir: Path) -> LabelSet:
    """Generate the starter set into ``out_dir`` (replacing what is there)."""
    label_set = build_starter()
    label_set.path = write_artifact(label_set.data, out_dir, overwrite=True)
    return label_set


def main(argv: Optional[List[str]] = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    out_dir = Path(args[0]) if args else Path(__file__).resolve().parent / "starter"
    label_set = write_starter(out_dir)
    print(f"wrote {len(label_set)} items to {out_dir} ({label_set.content_hash})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
