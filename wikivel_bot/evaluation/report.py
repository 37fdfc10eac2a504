"""Tables for people: Markdown (terminal, wiki talk pages, docs) and a standalone HTML page.

Numbers are shown as percentages with one decimal, like the paper's Tables 4 and 5; JSON
output keeps fractions.
"""

from __future__ import annotations

import html
from dataclasses import dataclass, field
from typing import List, Optional, Sequence

from wikivel_bot.evaluation.scoring import NDCG_K, EvaluationReport


@dataclass(frozen=True)
class Table:
    """A titled table with notes below it.

    :param title: heading.
    :param headers: column names.
    :param rows: cells as text, one list per row.
    :param notes: sentences printed under the table (caveats, counts).
    """

    title: str
    headers: Sequence[str]
    rows: Sequence[Sequence[str]]
    notes: Sequence[str] = field(default_factory=tuple)

    def markdown(self) -> str:
        """A GitHub-flavoured Markdown table, columns padded so it also reads as plain text."""
        widths = [len(h) for h in self.headers]
        for row in self.rows:
            widths = [max(w, len(c)) for w, c in zip(widths, row)]

        def line(cells: Sequence[str]) -> str:
            return "| " + " | ".join(c.ljust(w) for c, w in zip(cells, widths)) + " |"

        parts = [f"## {self.title}", "", line(self.headers), "|" + "|".join("-" * (w + 2) for w in widths) + "|"]
        parts += [line(row) for row in self.rows]
        if self.notes:
            parts.append("")
            parts += [f"- {note}" for note in self.notes]
        return "\n".join(parts) + "\n"

    def html(self) -> str:
        """An HTML fragment: heading, table and a list of notes (all text escaped)."""
        esc = html.escape
        head = "".join(f"<th>{esc(h)}</th>" for h in self.headers)
        body = "".join("<tr>" + "".join(f"<td>{esc(c)}</td>" for c in row) + "</tr>\n" for row in self.rows)
        notes = "".join(f"<li>{esc(n)}</li>" for n in self.notes)
        return (f"<h2>{esc(self.title)}</h2>\n<table>\n<thead><tr>{head}</tr></thead>\n<tbody>\n{body}</tbody>\n"
                f"</table>\n" + (f"<ul>{notes}</ul>\n" if notes else ""))


def html_page(tables: Sequence[Table], title: str = "wikivel-bot evaluation") -> str:
    """A standalone HTML page holding ``tables`` (no scripts, no external files)."""
    style = ("body{font-family:sans-serif;margin:2em}table{border-collapse:collapse}"
             "th,td{border:1px solid #bbb;padding:.25em .6em;text-align:right}"
             "th:first-child,td:first-child{text-align:left}")
    body = "\n".join(t.html() for t in tables)
    return (f'<!DOCTYPE html>\n<html lang="en">\n<head><meta charset="utf-8"><title>{html.escape(title)}</title>'
            f"<style>{style}</style></head>\n<body>\n<h1>{html.escape(title)}</h1>\n{body}</body>\n</html>\n")


def percent(value: Optional[float]) -> str:
    """0.4123 -> "41.2"; None -> "n/a"."""
    return "n/a" if value is None else f"{100.0 * value:.1f}"


def table_columns(ks: Sequence[int]) -> List[str]:
    """Columns of the Table-4-style view: R@k, DivR@k and mAP@k for every k, then nDCG@5 and MRR."""
    return [f"{metric}@{k}" for metric in ("R", "DivR", "mAP") for k in ks] + [f"nDCG@{NDCG_K}", "MRR"]


def evaluation_table(report: EvaluationReport, columns: Optional[Sequence[str]] = None,
                     title: str = "Ranking metrics (%)") -> Table:
    """One row per hop level, like the paper's Table 4 (which is the hops-0 row).

    :param report: the scores.
    :param columns: metric names to show (default :func:`table_columns`); P@k is also available.
    :param title: heading.
    """
    chosen = list(columns) if columns is not None else table_columns(report.ks)
    rows = [[str(level)] + [percent(report.scores[level].get(name)) for name in chosen] for level in report.hops]
    notes = [f"{report.files_scored} files scored"
             + (f" ({', '.join(f'{k}: {v}' for k, v in report.sources.items())})" if report.sources else "")]
    notes += report.notes()
    return Table(title=title, headers=["hops"] + chosen, rows=rows, notes=notes)
