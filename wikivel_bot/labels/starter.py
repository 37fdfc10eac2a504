"""The starter label set shipped with the package, and the script that generates it.

A few hundred commonly depicted items (people, animals, plants, buildings and structures,
vehicles, landscapes, artworks, ...) from ``data/starter_items.tsv`` so that ``suggest`` and
``run`` work before an operator builds a full set from the dumps, with their labels in more
languages from ``data/starter_texts.tsv`` for the review page. Regenerate after editing
either list::

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
TEXTS = "starter_texts.tsv"


def starter_records(text: Optional[str] = None) -> List[Dict[str, Any]]:
    """The records of the source list (``qid, label, description, p31, p279`` per line).

    :param text: the list's text (default: the packaged ``data/starter_items.tsv``).
    :raises ValueError: a line without QID, label and description.
    """
    if text is None:
        text = _packaged(SOURCE)
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


def starter_texts(text: Optional[str] = None) -> Dict[str, List[Dict[str, str]]]:
    """{qid: [{"lang", "label", "description"}]} of the other-language list (``qid, lang,
    label, description`` per line).

    :param text: the list's text (default: the packaged ``data/starter_texts.tsv``).
    :raises ValueError: a line without QID, language and a label or description.
    """
    out: Dict[str, List[Dict[str, str]]] = {}
    for number, line in enumerate((_packaged(TEXTS) if text is None else text).splitlines(), start=1):
        if not line.strip() or line.startswith("#"):
            continue
        qid, lang, label, description = (line.split("\t") + ["", "", ""])[:4]
        if not qid.strip() or not lang.strip() or not (label.strip() or description.strip()):
            raise ValueError(f"{TEXTS}, line {number}: expected qid, language, label, description")
        out.setdefault(qid.strip(), []).append(
            {"lang": lang.strip(), "label": label.strip(), "description": description.strip()})
    return out


def _packaged(name: str) -> str:
    return resources.files("wikivel_bot.labels").joinpath(f"data/{name}").read_text("utf-8")


def build_starter(text: Optional[str] = None, texts: Optional[str] = None) -> LabelSet:
    """The starter set in memory, from the source lists (English, then the other languages)."""
    records = starter_records(text)
    others = starter_texts(texts)
    for record in records:
        record["texts"] = [{"lang": "en", "label": record["label"], "description": record["description"]},
                           *others.get(record["qid"], ())]
    languages = ["en", *dict.fromkeys(t["lang"] for rows in others.values() for t in rows if t["lang"] != "en")]
    label_set = label_set_from_records(
        records, min_freq=0, languages=("en",), display_languages=languages,
        p31_blocklist=[f"Q{q}" for q in sorted(default_p31_blocklist())],
    )
    label_set.data.manifest["sources"] = [{"kind": "starter-list", "name": SOURCE, "date": None,
                                           "items": len(records)},
                                          {"kind": "starter-texts", "name": TEXTS, "date": None,
                                           "items": len(others)}]
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
