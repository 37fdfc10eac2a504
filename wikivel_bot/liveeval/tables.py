"""The report's tables, built once and rendered to Markdown, HTML and wikitext alike.

They are :class:`wikivel_bot.evaluation.Table` values (cells as text, percentages with one
decimal), so the terminal, the HTML page and the wikitext for the bot request show the very
same numbers. :func:`measured_on` is the sentence every set of numbers carries.
"""

from __future__ import annotations

from typing import Any, List, Mapping, Optional, Sequence

from wikivel_bot.evaluation import Table
from wikivel_bot.evaluation.report import percent
from wikivel_bot.liveeval.aggregate import METRICS, Summary
from wikivel_bot.liveeval.records import ALREADY, HOP_LEVELS, MORE_SPECIFIC, PAGE

WRITER_NAMES = {
    ALREADY: "already present (the file depicts the item)",
    MORE_SPECIFIC: "more specific present (the file depicts a descendant)",
    PAGE: "page refused ({{nobots}}, protection)",
    "would-write": "would be written",
}


def _day(text: str) -> str:
    return text.replace("T", " ").replace("Z", " UTC") if text else "?"


def measured_on(summary: Summary) -> str:
    """What the numbers of one run were measured on, in words (site, dates, files, linker,
    weights, label set)."""
    run = summary.run
    first, last = summary.uploaded
    linker = f"{run.linker} (version {run.linker_version})" if run.linker_version else run.linker
    backbone = f", open_clip {run.model}" if run.model else ""
    checkpoint = f", checkpoint {run.checkpoint}" if run.checkpoint else ""
    return (f"Measured on {summary.files:,} files of {run.site or '?'} ({run.selection or 'selection not recorded'}) "
            f"that carry human depicts (P180) statements, uploaded {_day(first)} to {_day(last)}; run started "
            f"{_day(run.started)}. Linker {linker}{backbone}, {run.weights_text()}{checkpoint}; label set "
            f"{run.labelset_hash or '?'} ({run.labelset_items:,} items); top {run.top_k} suggestions per file. "
            f"The human statements were hidden from the linker.")


def metrics_table(summary: Summary) -> Table:
    """One row per hop level: P@k, R@k, DivR@k and mAP@k (%)."""
    columns = [f"{m}@{k}" for m in METRICS for k in summary.ks]
    rows = [[str(level)] + [percent(summary.metrics[level][c]) for c in columns] for level in HOP_LEVELS]
    notes = [measured_on(summary),
             "P@k: share of the top-k suggestions that are correct (mean over files); R@k: files with a correct "
             "suggestion in the top k; DivR@k: human items matched one-to-one in the top k / min(k, human items); "
             "hops n: a suggestion that is an ancestor of a human item within n hops counts as correct"]
    notes += summary.notes
    return Table(f"{summary.run.linker}: ranking metrics (%)", ["hops", *columns], rows, notes)


def bands_table(summary: Summary) -> Table:
    """Precision by score band (micro: correct suggestions / suggestions)."""
    rows = [[band.name, str(band.suggestions)] + [percent(band.precision(h)) for h in HOP_LEVELS]
            for band in reversed(summary.bands)]
    return Table(f"{summary.run.linker}: precision by score band (%)",
                 ["score", "suggestions", *[f"hops {h}" for h in HOP_LEVELS]], rows,
                 ["bands of about equal size, highest scores first"])


def categories_table(summary: Summary) -> Table:
    """Per super-category: suggestion precision and the recall of human items."""
    k = summary.recall_k
    rows = [[c.name, str(c.suggestions), percent(c.precision(0)) if c.suggestions else "n/a",
             percent(c.precision(3)) if c.suggestions else "n/a", str(c.human),
             percent(c.recall(0)) if c.human else "n/a", percent(c.recall(3)) if c.human else "n/a"]
            for c in summary.categories]
    return Table(f"{summary.run.linker}: by super-category (%)",
                 ["super-category", "suggestions", "precision hops 0", "precision hops 3", "human items",
                  f"found in top {k}, hops 0", f"found in top {k}, hops 3"], rows,
                 ["precision: by the suggestion's super-category; found: by the human item's super-category, "
                  "an item counts as found when a top-k suggestion is it (or, at hops 3, an ancestor of it)"])


def evidence_table(summary: Summary) -> Table:
    """Precision by evidence kind: why each suggestion was made, and how often it was right."""
    total = summary.suggestions
    rows = [[e.name, str(e.suggestions), percent(e.suggestions / total if total else 0.0),
             f"{percent(e.precision(0))} ({e.correct[0]}/{e.suggestions})" if e.suggestions else "n/a",
             f"{percent(e.precision(3))} ({e.correct[3]}/{e.suggestions})" if e.suggestions else "n/a"]
            for e in summary.evidence]
    return Table(f"{summary.run.linker}: precision by evidence kind (%)",
                 ["evidence", "suggestions", "share", "precision hops 0", "precision hops 3"], rows,
                 ["evidence: why the item was suggested — image only (no evidence on the file's page), or "
                  "the file's own category, category label (an unlinked category named like the item), "
                  "link or identifier naming it, or several kinds at once; precision: correct suggestions / "
                  "suggestions of that kind"])


def writer_table(summary: Summary) -> Table:
    """What the writer's re-check would do with the suggestions (file with its human statements)."""
    total = summary.suggestions
    order = ["would-write", ALREADY, MORE_SPECIFIC, PAGE]
    rows = [[WRITER_NAMES[k], str(summary.writer.get(k, 0)),
             percent(summary.writer.get(k, 0) / total if total else 0.0)] for k in order]
    return Table(f"{summary.run.linker}: the writer's re-check (%)", ["verdict", "suggestions", "share"], rows,
                 [f"{percent(summary.writer_rate())}% of the suggestions would have been skipped by the writer"])


def _point(point: Optional[Mapping[str, Any]]) -> List[str]:
    if not point:
        return ["n/a", "n/a", "n/a"]
    accepted = int(point.get("accepted", 0))
    total = int(point.get("total", 0))
    precision = "none accepted"
    if accepted:
        precision = f"{percent(point.get('precision'))} ({point.get('correct', 0)}/{accepted})"
    return [precision, percent(point.get("recall")), f"{percent(point.get('coverage'))} ({accepted}/{total})"]


def _threshold_text(value: Any) -> str:
    return "accept nothing" if value is None else f"{float(value):.4f}"


def thresholds_table(document: Mapping[str, Any]) -> Table:
    """The calibrated thresholds, with calibration and held-out numbers (%)."""
    rows: List[List[str]] = []
    for name, entry in document.get("linkers", {}).items():
        files = entry.get("files", {})
        rows.append([name, "(all)", _threshold_text(entry.get("threshold")),
                     _point(entry.get("calibration"))[0], *_point(entry.get("held_out")),
                     f"{files.get('calibrate', 0)}/{files.get('held_out', 0)}"])
        for category, found in (entry.get("categories") or {}).items():
            rows.append([name, category, _threshold_text(found.get("threshold")),
                         _point(found.get("calibration"))[0], *_point(found.get("held_out")), ""])
        if entry.get("held_out_combined"):
            rows.append([name, "(per-category rule)", "", "", *_point(entry["held_out_combined"]), ""])
    notes = [f"target precision {percent(document.get('target'))}% at hops {document.get('hops', 0)}; files split "
             f"by a hash of their id, {percent(document.get('holdout'))}% held out; a threshold must accept at least "
             f"{document.get('min_support')} suggestion(s); only the held-out columns estimate what the bot will reach"]
    return Table("Calibrated thresholds", ["linker", "super-category", "threshold", "precision (calibration)",
                                           "precision (held out)", "recall (held out)", "coverage (held out)",
                                           "files calibration/held out"], rows, notes)


def comparison_table(summaries: Sequence[Summary]) -> Table:
    """One row per linker at hops 0, for runs of several linkers."""
    ks = summaries[0].ks
    columns = [f"{m}@{k}" for m in ("P", "R", "DivR") for k in ks]
    rows = [[s.run.linker, str(s.files), "yes" if s.run.random_weights else "no"]
            + [percent(s.metrics[0].get(c)) for c in columns] for s in summaries]
    return Table("Linkers compared (hops 0, %)", ["linker", "files", "random weights", *columns], rows)


def withheld_table(linker: str, results: Sequence[Any]) -> Table:
    """Suggestions the safety rules withheld, by rule: what the bot chose not to say.

    :param linker: the run's linker name (the title).
    :param results: that run's :class:`~wikivel_bot.liveeval.records.FileResult` values.
    """
    suggestions: dict = {}
    files: dict = {}
    for result in results:
        for rule, n in result.withheld.items():
            suggestions[rule] = suggestions.get(rule, 0) + n
            files[rule] = files.get(rule, 0) + (1 if n else 0)
    rows = [[rule, str(suggestions[rule]), str(files[rule])] for rule in sorted(suggestions)]
    if not rows:
        rows = [["none", "0", "0"]]
    notes = [f"Over {len(results):,} files. Named people (instances of human) and items of sensitive classes are "
             "not suggested from the image alone, only when the file's own text names them; blocked classes "
             "never. A withheld item is counted when it scored as high as the suggestions made."]
    return Table(f"{linker}: suggestions withheld by the safety rules", ["rule", "suggestions", "files"], rows, notes)
