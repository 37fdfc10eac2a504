"""``wikivel-bot report``: the community-trial report, as an HTML page and as wikitext.

Written to a directory::

    report.html      standalone page: what was measured on, tables, figures (inlined),
                     calibrated thresholds, human evaluation, examples with thumbnails
    report.wiki      the same tables and examples as wikitext for the bot request on Commons
    summary.json     every number as a fraction or a count (what the tables are made of)
    *.png            the figures (matplotlib)

Every number comes from the results file (and the thresholds file and rating sheets when
given); nothing is recomputed with a linker.
"""

from __future__ import annotations

import base64
import html
import json
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from wikivel_bot import __version__
from wikivel_bot.core.wikitext import wikitext_escape
from wikivel_bot.evaluation import Table, html_page
from wikivel_bot.liveeval import wikitext as wt
from wikivel_bot.liveeval.aggregate import DEFAULT_BANDS, DEFAULT_KS, summarize_run
from wikivel_bot.liveeval.plots import draw_figures
from wikivel_bot.liveeval.records import FileResult, by_linker
from wikivel_bot.liveeval.tables import (
    bands_table,
    categories_table,
    comparison_table,
    evidence_table,
    measured_on,
    metrics_table,
    thresholds_table,
    withheld_table,
    writer_table,
)

DEFAULT_EXAMPLES = 6
EXAMPLE_SUGGESTIONS = 5
TITLE = "wikivel-bot: measured precision before the first edit"


def pick_examples(results: Sequence[FileResult], count: int = DEFAULT_EXAMPLES, k: int = 10
                  ) -> Tuple[List[FileResult], List[FileResult]]:
    """(hits, misses) to show: files whose first suggestion is a human item, most confident
    first; and files with no correct suggestion in the top ``k`` (hops 0), most confident
    first — a confident miss is what a reviewer needs to see.
    """
    def top(result: FileResult) -> float:
        return result.suggestions[0].score if result.suggestions else float("-inf")

    hits = [r for r in results if r.suggestions and r.suggestions[0].correct(0)]
    misses = [r for r in results if not any(s.correct(0) for s in r.suggestions[:k])]
    hits.sort(key=lambda r: (-top(r), r.file))
    misses.sort(key=lambda r: (-top(r), r.file))
    return hits[:count], misses[:count]


def _mark(correct_hop: Optional[int]) -> str:
    if correct_hop is None:
        return "✗"
    return "✓" if correct_hop == 0 else f"≈{correct_hop}"


def _label(result: FileResult, qid: str) -> str:
    return result.truth_labels.get(qid, "")


def example_html(result: FileResult) -> str:
    """One example: thumbnail (linked to the file page), human items, top suggestions."""
    esc = html.escape
    human = ", ".join(f"{esc(q)}" + (f" {esc(_label(result, q))}" if _label(result, q) else "") for q in result.truth)
    shown = "".join(
        f"<li>{_mark(s.hop)} {esc(s.qid)} {esc(s.label)} ({s.score:.3f})"
        + (f" [hops {s.hop}, for {esc(s.match)}]" if s.hop else "")
        + (f" <em>writer: {esc(s.writer)}</em>" if s.writer else "")
        + (f" <small>why: {esc('; '.join(s.evidence))}</small>" if s.evidence else "") + "</li>"
        for s in result.suggestions[:EXAMPLE_SUGGESTIONS])
    link = esc(result.page_url or "#", quote=True)
    return (f'<figure class="example"><a href="{link}"><img src="{esc(result.thumb_url, quote=True)}" '
            f'alt="{esc(result.title, quote=True)}" loading="lazy" width="160"></a>'
            f"<figcaption><strong>{esc(result.title)}</strong><br>human: {human}<ol>{shown}</ol>"
            f"</figcaption></figure>\n")


def example_wikitext(result: FileResult) -> Tuple[str, str]:
    """(title, gallery caption) of one example."""
    human = ", ".join(wt.item_link(q, _label(result, q)) for q in result.truth)
    shown = "; ".join(f"{s.rank} {_mark(s.hop)} {wt.item_link(s.qid, s.label)} ({s.score:.3f}"
                      + (f", why: {wikitext_escape(', '.join(s.evidence))}" if s.evidence else "") + ")"
                      for s in result.suggestions[:EXAMPLE_SUGGESTIONS])
    return result.title, f"human: {human}. suggested: {shown}"


def _withheld_counts(results: Sequence[FileResult]) -> Dict[str, int]:
    counts: Dict[str, int] = {}
    for result in results:
        for rule, n in result.withheld.items():
            counts[rule] = counts.get(rule, 0) + n
    return counts


def _figure_html(path: Path) -> str:
    data = base64.b64encode(path.read_bytes()).decode("ascii")
    return (f'<figure><img alt="{html.escape(path.stem)}" src="data:image/png;base64,{data}">'
            f"<figcaption>{html.escape(path.stem.replace('_', ' '))}</figcaption></figure>\n")


def write_report(
    results: Sequence[FileResult],
    out_dir: Path,
    *,
    thresholds: Optional[Mapping[str, Any]] = None,
    ratings: Any = None,
    ks: Sequence[int] = DEFAULT_KS,
    bands: int = DEFAULT_BANDS,
    examples: int = DEFAULT_EXAMPLES,
    sources: Sequence[str] = (),
) -> Dict[str, Path]:
    """Write report.html, report.wiki, summary.json and the figures to ``out_dir``.

    :param results: per-file results (one or more linkers).
    :param out_dir: created when missing.
    :param thresholds: a thresholds document (``wikivel-bot calibrate``).
    :param ratings: a :class:`wikivel_bot.evaluation.HumanEvalSummary` of rating sheets.
    :param ks: cut-offs of the metric tables.
    :param bands: score bands.
    :param examples: hits and misses shown per linker.
    :param sources: the results files, named in the page.
    :returns: name -> path of every file written.
    """
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    groups = by_linker(results)
    summaries = [summarize_run(group, ks, bands) for group in groups.values()]
    pngs, figure_notes = draw_figures(summaries, out_dir)
    generated = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    intro = (f"Generated by wikivel-bot {__version__} on {generated} from {', '.join(sources) or 'the results'}. "
             "The bot's suggestions for files that already carry human depicts (P180) statements were compared "
             "with those statements, which the linker did not see.")
    html_parts: List[str] = [f"<p>{html.escape(intro)}</p>\n"]
    wiki_parts: List[str] = [wt.heading(TITLE), wt.paragraph(intro)]
    tables: List[Table] = []
    if len(summaries) > 1:
        tables.append(comparison_table(summaries))
    for summary, group in zip(summaries, groups.values()):
        tables += [metrics_table(summary), bands_table(summary), categories_table(summary),
                   evidence_table(summary), writer_table(summary), withheld_table(summary.run.linker, group)]
    if thresholds is not None:
        tables.append(thresholds_table(thresholds))
    if ratings is not None:
        tables.append(ratings.table())
    html_parts.append("<h2>Measured on</h2>\n<ul>" + "".join(f"<li>{html.escape(measured_on(s))}</li>"
                                                               for s in summaries) + "</ul>\n")
    wiki_parts += [wt.heading("Measured on", 3), wt.bullet_list([measured_on(s) for s in summaries])]
    for table in tables:
        html_parts.append(table.html())
        wiki_parts += [wt.heading(table.title, 3), wt.wikitable(table)]
    if ratings is not None:
        note = ("Human evaluation (paper §5.2): rating sheets from `wikivel-bot human-eval export --predictions` "
                "on these results, rated CC/TG/OR/CI/IDK by each rater; shares over all raters, Fleiss' kappa "
                "over the rated predictions.")
        html_parts.append(f"<p>{html.escape(note)}</p>\n")
        wiki_parts.append(wt.paragraph(note))
    html_parts.append("<h2>Figures</h2>\n" + "".join(_figure_html(p) for p in pngs)
                      + "".join(f"<p>{html.escape(n)}</p>\n" for n in figure_notes))
    for summary, group in zip(summaries, groups.values()):
        hits, misses = pick_examples(group, examples, max(ks))
        for kind, chosen in (("hits", hits), ("misses", misses)):
            title = f"{summary.run.linker}: examples, {kind}"
            html_parts.append(f"<h2>{html.escape(title)}</h2>\n<div class=\"examples\">"
                              + "".join(example_html(r) for r in chosen) + "</div>\n")
            wiki_parts += [wt.heading(title, 3), wt.gallery(example_wikitext(r) for r in chosen) if chosen
                           else wt.paragraph("none")]
    legend = ("✓ = a human item; ≈n = an ancestor of a human item n hops up; ✗ = neither. "
              "writer: what the writer's re-check would say with the human statements present.")
    html_parts.append(f"<p>{html.escape(legend)}</p>\n")
    wiki_parts.append(wt.paragraph(legend))
    page = html_page([], title=TITLE).replace("</body>", "".join(html_parts) + "</body>")
    page = page.replace("</style>", ".examples{display:flex;flex-wrap:wrap;gap:1em}"
                                    "figure.example{width:22em;margin:0}</style>")
    written = {"report.html": out_dir / "report.html", "report.wiki": out_dir / "report.wiki",
               "summary.json": out_dir / "summary.json"}
    written["report.html"].write_text(page, encoding="utf-8")
    written["report.wiki"].write_text(wt.document(wiki_parts), encoding="utf-8")
    summary_doc = {
        "generated": generated, "tool_version": __version__, "results": list(sources),
        "linkers": [s.to_dict() for s in summaries],
        "thresholds": dict(thresholds) if thresholds is not None else None,
        "human_evaluation": ratings.to_dict() if ratings is not None else None,
        "withheld": {name: _withheld_counts(group) for name, group in groups.items()},
    }
    written["summary.json"].write_text(json.dumps(summary_doc, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    for png in pngs:
        written[png.name] = png
    return written
