"""How the CLI shows the safety rules: what ``suggest`` withheld and why, and what is off.

Shared by ``suggest`` and ``status`` so both say the same thing in the same words.
"""

from __future__ import annotations

from typing import Any, Dict, List, Sequence

from wikivel_bot.core.safety import coverage_note, describe_rules, rule_counts, rules_from


def safety_doc(safety_settings: Any, label_set: Any = None) -> Dict[str, Any]:
    """The ``safety`` block of ``--json`` outputs: the rules, what is off, label-set notes."""
    rules = rules_from(safety_settings)
    doc: Dict[str, Any] = {
        "withhold_people": rules.withhold_people,
        "person_classes": sorted(rules.person_classes),
        "sensitive_classes": sorted(rules.sensitive_classes),
        "blocked_classes": sorted(rules.blocked_classes),
        "skip_templates": list(safety_settings.skip_templates),
        "switched_off": list(rules.off_notes()),
        "summary": describe_rules(rules),
    }
    if label_set is not None and coverage_note(label_set):
        doc["note"] = coverage_note(label_set)
    return doc


def notice_lines(safety_settings: Any, label_set: Any = None) -> List[str]:
    """Lines printed above a table: a WARNING per switched-off rule, a note on old label sets."""
    lines = [f"WARNING: {note}" for note in rules_from(safety_settings).off_notes()]
    if label_set is not None and coverage_note(label_set):
        lines.append(f"note: {coverage_note(label_set)}")
    return lines


def withheld_entries(outcome: Any, label_set: Any) -> List[Dict[str, Any]]:
    """What the rules withheld for one linked file: qid, label, score, rule, reason (shown
    only with ``suggest --show-withheld``; every other output has counts by rule)."""
    from wikivel_bot.core.ranking import describe_item

    return [
        {"qid": w.qid, "label": describe_item(label_set, w.qid)[0], "score": round(w.score, 6),
         "rule": w.rule, "reason": w.reason}
        for w in outcome.ranking.withheld
    ]


def withheld_lines(outcome: Any, label_set: Any, verbose: int, show: bool = False) -> List[str]:
    """Table lines for one linked file: a count by rule; with ``-v`` one line per withheld
    suggestion (score and reason, not the item); with ``show`` (``--show-withheld``) the
    item too."""
    entries = withheld_entries(outcome, label_set)
    if not entries:
        return []
    by_rule = outcome.ranking.withheld_by_rule()
    counts = rule_counts(by_rule)
    hint = "" if verbose or show else " (-v lists them; --show-withheld names them)"
    lines = [f"  withheld by the safety rules: {counts}{hint}"]
    if verbose or show:
        for entry in entries:
            name = f"{entry['qid']} ({entry['label']})" if entry["label"] else entry["qid"]
            lines.append(f"    {name + ' ' if show else ''}{entry['score']:.4f}: {entry['reason']}")
    return lines


def count_withheld(outcomes: Sequence[Any]) -> Dict[str, int]:
    """{rule: withheld suggestions} over linked outcomes."""
    total: Dict[str, int] = {}
    for outcome in outcomes:
        ranking = getattr(outcome, "ranking", None)
        if ranking is None:
            continue
        for rule, n in ranking.withheld_by_rule().items():
            total[rule] = total.get(rule, 0) + n
    return total
