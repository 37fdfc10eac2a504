"""What a label set says about one item: for ``wikivel-bot labels lookup`` and reports.

For a kept item: label, description, image, ancestors by hop, direct and accumulated counts,
super-category. For a depicted item that was not kept: which items replaced it, or that it
was dropped and why. Ancestors that are only known as ancestors are described too.
"""

from __future__ import annotations

from typing import Any, Dict, List

from wikivel_bot.errors import UsageError
from wikivel_bot.labels.labelset import LabelSet
from wikivel_bot.types import is_qid


def explain(label_set: LabelSet, qid: str) -> Dict[str, Any]:
    """A JSON-ready description of ``qid`` in ``label_set``.

    :raises UsageError: ``qid`` is not an item id, or the set knows nothing about it.
    """
    qid = qid.strip().upper()
    if not is_qid(qid):
        raise UsageError(f"{qid!r} is not a Wikidata item id (expected Q followed by digits)")
    node = label_set.node_of(qid)
    if node < 0:
        raise UsageError(
            f"{qid} is unknown to this label set: it was not kept, not depicted in its input, "
            f"and is no ancestor of either"
        )
    index = label_set.index_of(qid)
    out: Dict[str, Any] = {
        "qid": qid,
        "label": label_set.label_of(qid),
        "status": label_set.status(qid),
        "index": index,
        "super_category": label_set.super_category(qid),
        "direct_count": label_set.direct_frequency(qid),
        "accumulated_count": label_set.frequency(qid),
        "min_freq": label_set.min_freq,
    }
    if index is not None:
        out["description"] = label_set.description_of(qid)
        out["image"] = label_set.image_of(qid)
    else:
        out["reason"] = label_set.reason(qid)
        out["replaced_by"] = [
            {"qid": q, "label": label_set.label_of(q), "hops": label_set.hops(q, qid)}
            for q in label_set.replacements(qid)
        ]
    by_hop: Dict[str, List[Dict[str, Any]]] = {}
    for ancestor, hops in label_set.ancestors(qid).items():
        by_hop.setdefault(str(hops), []).append(
            {"qid": ancestor, "label": label_set.label_of(ancestor), "kept": ancestor in label_set}
        )
    out["ancestors"] = by_hop
    return out


def format_explanation(info: Dict[str, Any]) -> str:
    """The human-readable form of :func:`explain`'s result."""
    lines = [f"{info['qid']}  {info['label'] or '(no label)'}"]
    if info["status"] == "kept":
        lines.append(f"  kept as item #{info['index']}; super-category: {info['super_category']}")
        if info.get("description"):
            lines.append(f"  description: {info['description']}")
        if info.get("image"):
            lines.append(f"  image: File:{info['image']}")
    elif info["status"] == "replaced":
        names = ", ".join(f"{r['qid']} ({r['label']}, {r['hops']} hop{'s' if r['hops'] != 1 else ''} up)"
                          for r in info["replaced_by"])
        lines.append(f"  not kept ({info['reason']}); replaced by {names}")
    elif info["status"] == "dropped":
        why = info["reason"]
        if why.startswith("below"):
            why += f"; no ancestor within 3 hops reaches f={info['min_freq']}"
        lines.append(f"  dropped: {why}")
    else:
        lines.append(f"  not kept, known only as an ancestor ({info['reason']})")
    lines.append(
        f"  depicted in {_files(info['direct_count'])} directly, {_files(info['accumulated_count'])} "
        f"with its descendants within 3 hops (f={info['min_freq']})"
    )
    for hops, ancestors in sorted(info["ancestors"].items()):
        names = ", ".join(f"{a['qid']} {a['label']}{'' if a['kept'] else ' [not kept]'}" for a in ancestors)
        lines.append(f"  {hops} hop{'s' if hops != '1' else ''} up: {names}")
    if not info["ancestors"]:
        lines.append("  no known ancestors")
    return "\n".join(lines)


def _files(n: int) -> str:
    return f"{n} file{'' if n == 1 else 's'}"
