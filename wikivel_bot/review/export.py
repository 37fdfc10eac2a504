"""Exports for patrollers: CSV, JSON Lines, QuickStatements and a wikitext review page.

All four read the same stream of :class:`ReviewFile` values (from
``queue.reviews.iter_review_files``) and write as they go, so an export of a large queue
never holds it in memory. Which pairs are exported is the caller's filter; the rule that
rejected pairs appear only when asked for by name lives in :func:`export_states`.
"""

from __future__ import annotations

import csv
import json
from dataclasses import dataclass, field
from datetime import datetime
from typing import Callable, Dict, Iterable, Iterator, List, Optional, Sequence, TextIO, Tuple

from wikivel_bot.core.review_rules import (
    EXPORT_FORMATS,
    ReviewCandidate,
    ReviewFile,
    file_title,
    format_score,
    format_signals,
    spreadsheet_safe,
)
from wikivel_bot.core.safety import rule_counts
from wikivel_bot.core.wikitext import wikitext_escape
from wikivel_bot.errors import UsageError
from wikivel_bot.types import CandidateState

FORMATS = EXPORT_FORMATS

# The CSV's columns; `decision` is left empty for the patroller (see import_decisions).
CSV_COLUMNS = (
    "mid", "title", "file_url", "thumb_url", "qid", "label", "description", "score", "rank",
    "state", "prominent", "linker", "categories", "file_description", "existing_depicts",
    "notes", "alpha", "probability", "evidence_kind", "evidence", "decision",
)
# Columns holding free text from the wiki or the label set (guarded against formulas).
_TEXT_COLUMNS = {"title", "label", "description", "categories", "file_description", "notes", "evidence"}

# QuickStatements adds statements: only pairs a human approved may become one (a dry run
# leaves them approved).
QUICKSTATEMENTS_STATES = frozenset({CandidateState.APPROVED})

# Thumbnail width on the wikitext page (a standard thumbnail step).
WIKITEXT_THUMB_PX = 120


@dataclass
class ExportStats:
    """What an export wrote. ``ranks_lost``: prominent pairs written by QuickStatements
    lines, which cannot carry the preferred rank."""

    files: int = 0
    pairs: int = 0
    ranks_lost: int = 0
    # Suggestions the safety rules withheld for the exported files, by rule.
    withheld: Dict[str, int] = field(default_factory=dict)

    def withheld_line(self) -> str:
        """"withheld by the safety rules: 2 named person, 1 sensitive class" ('' when none)."""
        if not self.withheld:
            return ""
        counts = rule_counts(self.withheld)
        return f"withheld by the safety rules for these files: {counts}"


def export_states(fmt: str, asked: Sequence[str]) -> Tuple[CandidateState, ...]:
    """The candidate states an export covers.

    :param fmt: one of :data:`FORMATS`.
    :param asked: ``--state`` values as given; empty = the format's default (pairs waiting
        for review; approved pairs for QuickStatements). ``all`` = every state except
        ``rejected``, which is exported only when named.
    :raises UsageError: an unknown state, or QuickStatements asked for unapproved pairs.
    """
    if not asked:
        states: Tuple[CandidateState, ...] = (
            (CandidateState.APPROVED,) if fmt == "quickstatements" else (CandidateState.PROPOSED,)
        )
    else:
        chosen: List[CandidateState] = []
        for name in asked:
            if name == "all":
                chosen.extend(s for s in CandidateState if s is not CandidateState.REJECTED)
                continue
            try:
                chosen.append(CandidateState(name))
            except ValueError:
                known = ", ".join(s.value for s in CandidateState)
                raise UsageError(f"unknown state {name!r} (known: {known}, all)") from None
        states = tuple(dict.fromkeys(chosen))
    if fmt == "quickstatements" and not set(states) <= QUICKSTATEMENTS_STATES:
        raise UsageError(
            "QuickStatements exports contain approved pairs only (--state approved): "
            "a statement is added only after a human said yes"
        )
    return states


def write_export(
    files: Iterable[ReviewFile],
    fmt: str,
    out: TextIO,
    page_url: Callable[[str], str],
    generated_at: datetime,
    heading: str = "",
    label_of: Optional[Callable[[str], str]] = None,
) -> ExportStats:
    """Write ``files`` and their candidates to ``out`` in format ``fmt``.

    :param files: the files with the candidates to export, in order.
    :param fmt: csv, jsonl, quickstatements or wikitext.
    :param out: a text stream (opened with ``newline=""`` for CSV files).
    :param page_url: title -> file page URL (``core.review_rules.file_page_url``).
    :param generated_at: stamped on the wikitext page (UTC).
    :param heading: a line for the wikitext page saying what was exported.
    :param label_of: qid -> label for items without one of their own (the wikitext's
        "depicts now"); without it those show their QID only.
    """
    stats = ExportStats()
    files = _counting_withheld(files, stats)
    if fmt == "csv":
        _write_csv(files, out, page_url, stats)
    elif fmt == "jsonl":
        _write_jsonl(files, out, page_url, stats)
    elif fmt == "quickstatements":
        _write_qs(files, out, stats)
    elif fmt == "wikitext":
        _write_wikitext(files, out, stats, generated_at, heading, label_of)
    else:
        raise UsageError(f"unknown export format {fmt!r} (known: {', '.join(FORMATS)})")
    return stats


def _counting_withheld(files: Iterable[ReviewFile], stats: ExportStats) -> Iterator[ReviewFile]:
    # Counted as the files stream past, whatever the format writes of them.
    for f in files:
        for rule, n in f.withheld_by_rule().items():
            stats.withheld[rule] = stats.withheld.get(rule, 0) + n
        yield f


def pair_record(f: ReviewFile, c: ReviewCandidate, page_url: Callable[[str], str]) -> Dict[str, object]:
    """Everything a patroller needs about one pair, as JSON-ready values."""
    return {
        "mid": f.mid,
        "title": f.title,
        "file_url": page_url(f.title),
        "thumb_url": f.thumb_url,
        "qid": c.qid,
        "label": c.label,
        "description": c.description,
        "score": c.score,
        "rank": c.rank,
        "state": c.state.value,
        "prominent": c.prominent,
        "linker": c.linker,
        "reviewer": c.reviewer,
        "categories": list(f.categories),
        "file_description": f.description,
        "existing_depicts": [d.qid for d in f.depicts],
        "notes": list(c.notes) + (["random weights: meaningless"] if c.random_weights else []),
        "alpha": c.alpha,
        "probability": c.probability,
        # Why: "image only" or the file's own evidence (core.evidence_view), as suggest --json.
        "evidence_kind": c.evidence.kind,
        "evidence": list(c.evidence.texts),
        "sources": [ev.as_dict() for ev in c.evidence.sources],
        "in_label_set": c.evidence.in_label_set,
    }


def _write_csv(files: Iterable[ReviewFile], out: TextIO, page_url: Callable[[str], str], stats: ExportStats) -> None:
    writer = csv.writer(out)
    writer.writerow(CSV_COLUMNS)
    for f in files:
        stats.files += 1
        for c in f.candidates:
            record = pair_record(f, c, page_url)
            cells = {
                **record,
                "score": format_score(c.score),
                "rank": "" if c.rank is None else str(c.rank),
                "prominent": "yes" if c.prominent else "",
                "alpha": "" if c.alpha is None else f"{c.alpha:.2f}",
                "probability": "" if c.probability is None else f"{c.probability:.2f}",
                "categories": " | ".join(f.categories),
                "existing_depicts": " ".join(record["existing_depicts"]),  # type: ignore[arg-type]
                "notes": "; ".join(record["notes"]),  # type: ignore[arg-type]
                "file_description": " ".join(f.description.split()),
                "evidence": c.evidence.why(),
                "decision": "",
            }
            writer.writerow(
                [spreadsheet_safe(str(cells[k])) if k in _TEXT_COLUMNS else str(cells[k]) for k in CSV_COLUMNS]
            )
            stats.pairs += 1


def _write_jsonl(files: Iterable[ReviewFile], out: TextIO, page_url: Callable[[str], str], stats: ExportStats) -> None:
    for f in files:
        stats.files += 1
        for c in f.candidates:
            out.write(json.dumps(pair_record(f, c, page_url), ensure_ascii=False, sort_keys=True) + "\n")
            stats.pairs += 1


def _write_qs(files: Iterable[ReviewFile], out: TextIO, stats: ExportStats) -> None:
    # One V1 command per line: entity|property|value. QuickStatements has no syntax for a
    # statement's rank, so a prominent approval loses it here (counted, reported by the CLI).
    for f in files:
        stats.files += 1
        for c in f.candidates:
            out.write(f"{f.mid}|P180|{c.qid}\n")
            stats.pairs += 1
            stats.ranks_lost += int(c.prominent)


def _write_wikitext(
    files: Iterable[ReviewFile],
    out: TextIO,
    stats: ExportStats,
    generated_at: datetime,
    heading: str,
    label_of: Optional[Callable[[str], str]] = None,
) -> None:
    stamp = generated_at.strftime("%Y-%m-%d %H:%M UTC")
    out.write("== Depicts (P180) suggestions for review ==\n")
    out.write(
        f"Depicts suggestions made by wikivel-bot, a visual entity linker, generated {stamp}"
        + (f" ({wikitext_escape(heading)})" if heading else "")
        + ". Each suggestion shows its score, why it was suggested (the file's own categories, links or "
        "identifiers naming the item, or the image only) and, once decided, its state. Please say below "
        "which suggestions are right or wrong; see [[Commons:Depicts]] for what belongs in depicts.\n\n"
    )
    out.write('{| class="wikitable sortable"\n! File !! Suggested depicts (score) !! Categories\n')
    for f in files:
        stats.files += 1
        title = file_title(f.title)
        suggestions = []
        for c in f.candidates:
            # The label to read, the QID beside it to check (two items may share a label).
            label = c.label or (label_of(c.qid) if label_of else "")
            text = f"[[d:{c.qid}|{wikitext_escape(label)}]] ({c.qid})" if label else f"[[d:{c.qid}|{c.qid}]]"
            if c.description:
                text += f" – {wikitext_escape(c.description)}"
            score = format_score(c.score)
            extra = [score] if score else []
            signals = format_signals(c.alpha, c.probability)
            if signals:
                extra.append(signals)
            if c.state is not CandidateState.PROPOSED:
                extra.append(c.state.value + (", prominent" if c.prominent else ""))
            # The evidence texts hold wiki markup ([[w:…]], {{Rijksmonument|…}}): escaped, shown as written.
            why = f"<br /><small>why: {wikitext_escape(c.evidence.why())}</small>"
            suggestions.append(text + (f" ({'; '.join(extra)})" if extra else "") + why)
            stats.pairs += 1
        categories = ", ".join(f"[[:Category:{wikitext_escape(c)}|{wikitext_escape(c)}]]" for c in f.categories)
        out.write("|-\n")
        present = ", ".join(_item_link(d.qid, label_of) for d in f.depicts)
        out.write(f"| [[{title}|{WIKITEXT_THUMB_PX}px]]<br />[[:{title}]] ({f.mid})"
                  + (f"<br />depicts now: {present}" if present else "") + "\n")
        out.write("| " + "<br />".join(suggestions) + "\n")
        out.write("| " + (categories or "–") + "\n")
    out.write("|}\n")
    if stats.withheld:
        # What the bot chose not to say, so the community sees it (docs/operator.md).
        out.write(f"\nThe bot's safety rules withheld {sum(stats.withheld.values())} suggestion(s) for these files ("
                  + ", ".join(f"{rule}: {n}" for rule, n in sorted(stats.withheld.items()))
                  + "): named people are not suggested from the image alone, nor items of sensitive classes, "
                    "unless the file's own text names them.\n")


def _item_link(qid: str, label_of: Optional[Callable[[str], str]]) -> str:
    """``[[d:Q146|house cat]] (Q146)``, or ``[[d:Q146|Q146]]`` without a label."""
    label = label_of(qid) if label_of else ""
    return f"[[d:{qid}|{wikitext_escape(label)}]] ({qid})" if label else f"[[d:{qid}|{qid}]]"
