"""The terminal review: render a :class:`ReviewSession` and turn keys into its calls.

Keys (``?`` shows them in the session)::

    1  approve the selected candidate        2  approve as prominent (preferred rank)
    3  reject it (remembered for this file)  s  skip it (stays proposed)
    n  skip the rest of this file            u  undo the last decision of this session
    up/down, j/k, Tab  move the selection    g N (or # N)  select candidate N
    o  open the file page in a browser       q  quit (prints the summary)
"""

from __future__ import annotations

import shutil
import textwrap
import webbrowser
from contextlib import nullcontext
from typing import Callable, ContextManager, Iterable, List, Optional, TextIO

from wikivel_bot.core.review_rules import format_score, format_signals
from wikivel_bot.core.safety import rule_counts
from wikivel_bot.review.session import ReviewSession, SessionCounts
from wikivel_bot.types import DecisionAction

ACTION_KEYS = {
    "1": DecisionAction.APPROVE,
    "2": DecisionAction.APPROVE_PROMINENT,
    "3": DecisionAction.REJECT,
    "s": DecisionAction.SKIP,
}
KEY_LINES = (
    "keys: 1 approve  2 approve as prominent  3 reject  s skip  n skip the rest of the file",
    "      up/down or g N select  u undo  o open the page  ? help  q quit",
)
HELP = (
    "1 approve | 2 approve as prominent (preferred rank: the main subject) | 3 reject (never proposed "
    "for this file again) | s skip (stays for later) | n skip the rest of this file | u undo the last "
    "decision | up/down, j/k or Tab move | g N or # N select candidate N | o open the file page | q quit"
)
PROMPT = "review> "
CLEAR = "\x1b[H\x1b[2J"
# Longest file description shown; the page has the rest.
DESCRIPTION_CHARS = 300


def run_review(
    session: ReviewSession,
    keys: Iterable[str],
    out: TextIO,
    open_url: Optional[Callable[[str], bool]] = None,
    suspend: Optional[Callable[[], ContextManager[None]]] = None,
) -> SessionCounts:
    """Run a session until ``q`` (or the keys run out); returns its counts.

    :param session: a session not yet started.
    :param keys: key tokens, from :mod:`wikivel_bot.review.keys`.
    :param out: where the screen goes; it is cleared between files only when it is a TTY.
    :param open_url: opens a page in a browser (``webbrowser.open`` by default).
    :param suspend: a context manager that gives the terminal back while a browser starts
        (a console browser needs normal mode).
    """
    opener = open_url or webbrowser.open
    clear = _isatty(out)
    session.start()
    _draw(session, out, clear)
    number: Optional[str] = None
    for key in keys:
        if number is not None:
            number, handled = _number_key(session, number, key)
            if handled:
                if number is None:
                    _draw(session, out, clear)
                continue
        if key == "q":
            break
        if key == "enter":
            continue
        if key in ACTION_KEYS:
            session.decide(ACTION_KEYS[key])
        elif key == "n":
            session.skip_file()
        elif key == "u":
            session.undo()
        elif key in ("down", "j"):
            session.move(1)
        elif key in ("up", "k"):
            session.move(-1)
        elif key in ("g", "#"):
            if session.current is not None:
                number = ""
                out.write("candidate number: ")
                out.flush()
            continue
        elif key == "o":
            _open(session, opener, suspend)
        elif key == "?":
            session.message = HELP
        else:
            session.message = f"unknown key {key!r} (? for help)"
        _draw(session, out, clear)
    return session.counts


def render(session: ReviewSession, width: int = 100, height: Optional[int] = None) -> str:
    """The screen for the session's current state (without the prompt).

    :param width: terminal columns; long lines are cut, URLs are not (they wrap).
    :param height: terminal rows. When given, the screen fits in ``height - 1`` rows (the
        prompt takes the last), so the file's header (title, description, depicts now)
        never scrolls away: candidates' evidence and notes are shown for the selected one only, then
        the candidate list becomes a window around the selection.
    """
    view = session.current
    top: List[str] = []
    bottom: List[str] = []
    if view is None:
        top.append("No more files to review with these filters.")
        top.append("keys: u undo the last decision  q quit")
        blocks: List[List[str]] = []
        cursor = 0
    else:
        f = view.file
        # Files linked during the session can make the count at its start too small.
        position = f"file {view.number}" + (f" of {session.total}" if view.number <= session.total else "")
        top.append(_cut(f"== {position}: {f.mid}  {f.title} ==", width))
        # URLs are never cut: a reviewer copies or clicks them.
        top.append(f"page:        {session.page_url()}")
        top.append(f"thumbnail:   {f.thumb_url or '(none)'}")
        uploaded = f.uploaded_at.strftime("%Y-%m-%d %H:%M UTC") if f.uploaded_at else "(unknown)"
        top.append(_cut(f"uploaded:    {uploaded}" + (f" by {f.uploader}" if f.uploader else ""), width))
        top.append(_cut(f"categories:  {'; '.join(f.categories) or '(none)'}", width))
        description = " ".join(f.description.split())
        if len(description) > DESCRIPTION_CHARS:
            description = description[:DESCRIPTION_CHARS - 1] + "…"
        top.append(_cut(f"description: {description or '(none)'}", width * 2))
        depicts = ", ".join(_depiction(d.qid, d.rank, session.label_of) for d in f.depicts)
        top.append(_cut(f"depicts now: {depicts or '(nothing yet)'}", width))
        if f.withheld:
            # What the bot chose not to say about this file (named people, sensitive classes).
            counts = rule_counts(f.withheld_by_rule())
            top.append(_cut(f"withheld:    {counts} (safety rules)", width))
        if any(c.random_weights for c in f.candidates):
            top.append(_cut("WARNING: made by a linker with random weights - these suggestions mean nothing", width))
        top.append("")
        top.append("candidates:")
        blocks = []
        for i, cand in enumerate(f.candidates):
            pointer = ">" if i == view.cursor else " "
            text = cand.label + (f" - {cand.description}" if cand.description else "")
            mark = f"  [{view.marks[i]}]" if view.marks[i] else ""
            row = f"{pointer} #{i + 1:<2} {cand.qid:<10} {format_score(cand.score):>6}  {text}"
            block = [_cut(row, width - len(mark)) + mark]
            # Why the item was suggested: the file's own evidence, or the image only.
            block.append(_cut(f"        why: {cand.evidence.why()}", width * 2))
            signals = format_signals(cand.alpha, cand.probability)
            if signals:
                block.append(_cut(f"        {signals}", width))
            if cand.notes:
                block.append(_cut(f"        notes: {'; '.join(cand.notes)}", width))
            blocks.append(block)
        cursor = view.cursor
        bottom.append("")
        bottom.extend(_cut(line, width) for line in KEY_LINES)
    if session.message:
        # Wrapped here at spaces: the terminal would wrap a long message (the ? help) at its
        # last column, in the middle of a word.
        bottom.extend(textwrap.wrap(f">> {session.message}", max(20, width), subsequent_indent="   ",
                                    break_long_words=False, break_on_hyphens=False))
    if height is not None and view is not None:
        top, middle = _fit(top, blocks, cursor, bottom, width, height - 1)
    else:
        middle = [line for block in blocks for line in block]
    return "\n".join(top + middle + bottom) + "\n"


def _fit(top: List[str], blocks: List[List[str]], cursor: int, bottom: List[str], width: int,
         rows: int) -> "tuple[List[str], List[str]]":
    """(header, candidate lines) that fit with ``bottom`` in ``rows`` terminal rows.

    The header stays; first the notes of candidates other than the selected one go, then
    the list becomes a window around the selection with "… N more" lines. On a very small
    terminal the header loses its thumbnail URL and its description keeps one row.
    """
    def used(lines: List[str]) -> int:
        return sum(_rows(line, width) for line in lines)

    def window_fits(header: List[str], shown: List[List[str]]) -> bool:
        return used(header) + used([line for block in shown for line in block]) + used(bottom) <= rows

    if window_fits(top, blocks):
        return top, [line for block in blocks for line in block]
    lean = [block if i == cursor else block[:1] for i, block in enumerate(blocks)]
    if window_fits(top, lean):
        return top, [line for block in lean for line in block]
    header = top
    free = rows - used(header) - used(bottom)
    if free < 3 + len(lean[cursor]):  # not even the selection with its neighbours' counts
        header = [line for line in top if not line.startswith("thumbnail:")]
        header = [_cut(line, width) if line.startswith("description:") else line for line in header]
        free = rows - used(header) - used(bottom)
    if free < 3 + len(lean[cursor]):  # a tiny terminal: the essentials only
        header = [line for line in header
                  if line and not line.startswith(("uploaded:", "categories:", "candidates:"))]
        bottom[:] = [line for line in bottom if line]
        free = rows - used(header) - used(bottom)
    if used(lean[cursor]) + (cursor > 0) + (cursor < len(lean) - 1) > free:
        lean[cursor] = lean[cursor][:1]
    # Grow a window around the selection one candidate at a time, alternating below and
    # above, keeping one row for each "… more" line that is still needed.
    first = last = cursor
    size = used(lean[cursor])
    while True:
        grew = False
        for step in (1, -1):
            lo, hi = (first, last + 1) if step == 1 else (first - 1, last)
            if lo < 0 or hi >= len(lean):
                continue
            extra = used(lean[hi] if step == 1 else lean[lo])
            needed = size + extra + (1 if lo > 0 else 0) + (1 if hi < len(lean) - 1 else 0)
            if needed <= free:
                first, last, size, grew = lo, hi, size + extra, True
        if not grew:
            break
    middle: List[str] = []
    if first > 0:
        middle.append(f"  … {first} more above")
    middle.extend(line for block in lean[first:last + 1] for line in block)
    if last < len(lean) - 1:
        middle.append(f"  … {len(lean) - 1 - last} more below")
    return header, middle


def _rows(line: str, width: int) -> int:
    """Terminal rows a line takes (long lines wrap)."""
    return max(1, -(-len(line) // max(1, width)))


def _depiction(qid: str, rank: str, label_of: Optional[Callable[[str], str]]) -> str:
    label = label_of(qid) if label_of else ""
    return qid + (f" ({label})" if label else "") + (" (prominent)" if rank == "preferred" else "")


def _draw(session: ReviewSession, out: TextIO, clear: bool) -> None:
    size = shutil.get_terminal_size((100, 24))
    width = max(40, size.columns)
    # On a terminal the screen is redrawn in place and must fit; piped output just scrolls.
    height = max(12, size.lines) if clear else None
    out.write((CLEAR if clear else "\n") + render(session, width, height) + PROMPT)
    out.flush()


def _number_key(session: ReviewSession, number: str, key: str) -> "tuple[Optional[str], bool]":
    """Feed one key to a candidate number being typed: (digits so far or None, handled)."""
    count = len(session.current.file.candidates) if session.current else 0
    if key.isdigit():
        number += key
        # Select as soon as no further digit could make a valid number (one key for ≤ 9).
        if int(number) * 10 > count:
            session.select(int(number))
            return None, True
        return number, True
    if key == "enter" and number:
        session.select(int(number))
        return None, True
    # Any other key ends the number (Escape cancels it quietly) and is not acted on.
    session.message = "" if key in ("escape", "enter") else f"not a candidate number: {key!r}"
    return None, True


def _open(
    session: ReviewSession,
    opener: Callable[[str], bool],
    suspend: Optional[Callable[[], ContextManager[None]]],
) -> None:
    url = session.page_url()
    if not url:
        session.message = "no file shown"
        return
    with (suspend() if suspend else nullcontext()):
        try:
            opened = opener(url)
        except Exception as exc:  # a broken browser setup must not end the session
            opened, session.message = False, f"could not open a browser ({exc}): {url}"
            return
    session.message = f"opened {url}" if opened else f"no browser available: {url}"


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[: max(1, width - 1)] + "…"


def _isatty(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False
