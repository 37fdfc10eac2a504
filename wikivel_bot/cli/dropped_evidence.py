"""``suggest -v``: the file's own evidence that did not become a suggestion, and why.

The file's evidence (a linked category, a description link, an identifier: docs/evidence.md)
proposes items besides the image's guesses, and the ranking rules still apply to them: an item
the image scores under a threshold is dropped like any other. Shown nowhere, that looks as if
the evidence had been ignored, so ``suggest -v`` gives each such item one line: the evidence
that named it, the item, its score and the rule that dropped it (for a threshold, which one —
``linker.min_score``, or the operating threshold of a learned checkpoint that replaces it — and
its value).

An item a safety rule covers (a named person, a sensitive class) is counted and never named
without ``--show-withheld``, as everywhere else: evidence does not change who may be named.
"""

from __future__ import annotations

import re
from typing import Any, Dict, List

from wikivel_bot.core.evidence import evidence_for
from wikivel_bot.core.ranking import DroppedItem, describe_item

# The ranking rules' words for a score under the global threshold and under an item's own
# (core.ranking._exclusion_reason).
_BELOW_GLOBAL = re.compile(r"^score \S+ below the threshold (\S+)$")
_BELOW_ITEM = re.compile(r"^score \S+ below the item's threshold (\S+)$")


def dropped_evidence_lines(outcome: Any, built: Any, min_score: float, label_set: Any,
                           show_withheld: bool = False) -> List[str]:
    """Lines for one linked file: each item its evidence names that is not among its
    suggestions, with the evidence, the item, its score and why; [] when there is none.

    :param outcome: a ``Linked`` outcome (its ``evidence``, ``candidates`` and ``ranking``).
    :param built: the ``ReadyLinker``: its rules' threshold, and the operating threshold and
        checkpoint of a learned model when one replaced ``linker.min_score``.
    :param min_score: ``linker.min_score`` as configured.
    :param show_withheld: name the items a safety rule covers too (``--show-withheld``).
    """
    evidence = tuple(getattr(outcome, "evidence", ()) or ())
    if not evidence:
        return []
    suggested = {c.qid for c in outcome.candidates}
    dropped: Dict[str, DroppedItem] = {}
    for item in outcome.ranking.dropped:
        dropped.setdefault(item.qid, item)
    lines: List[str] = []
    covered = unscored = 0
    for qid in dict.fromkeys(ev.qid for ev in evidence):
        if qid in suggested:
            continue
        item = dropped.get(qid)
        if item is None:
            unscored += 1  # an item from outside the label set that nothing could be read of
            continue
        if item.rule and not show_withheld:
            covered += 1
            continue
        label = describe_item(label_set, qid)[0] if label_set is not None else ""
        name = f"{qid} ({label})" if label else qid
        sources = "; ".join(ev.source for ev in evidence_for(qid, evidence))
        lines.append(f"    {sources} → {name}: {why_dropped(item, built, min_score)}")
    if covered:
        lines.append(f"    and {covered} more that a safety rule covers (--show-withheld names them)")
    if unscored:
        lines.append(f"    and {unscored} more that could not be scored (nothing could be read of them "
                     "on Wikidata)")
    if not lines:
        return []
    return ["  evidence not suggested:"] + lines


def why_dropped(item: DroppedItem, built: Any, min_score: float) -> str:
    """The rule that dropped ``item``, with its score; a threshold by its setting and value."""
    score = f"score {item.score:.4f}"
    reason, _, safety = item.reason.partition("; ")
    safety = f"; {safety}" if safety else ""
    below = _BELOW_GLOBAL.match(reason)
    if below:
        threshold = getattr(getattr(built, "rules", None), "min_score", None)
        value = f"{threshold:.4f}" if isinstance(threshold, float) else below.group(1)
        operating = getattr(built, "operating_threshold", None)
        if operating is not None:
            source = getattr(built, "operating_checkpoint", "") or "the learned checkpoint"
            return (f"{score} below the operating threshold {value} of the learned checkpoint {source} "
                    f"(it replaces linker.min_score {min_score:.4f}){safety}")
        return f"{score} below the image threshold linker.min_score {value}{safety}"
    below = _BELOW_ITEM.match(reason)
    if below:
        return f"{score} below the item's own threshold {below.group(1)}{safety}"
    return f"{item.reason} ({score})"
