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
import webbrowser
from contextlib import nullcontext
from typing import Callable, ContextManager, Iterable, List, Optional, TextIO

from wikivel_bot.core.review_rules import format_score, format_signals
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


def render(session: ReviewSession, width: int = 100) -> str:
    """The screen for the session's current state (without the prompt)."""
    view = session.current
    lines: List[str] = []
    if view is None:
        lines.append("No more files to review with these filters.")
        lines.append("keys: u undo the last decision  q quit")
    else:
        f = view.file
        # Files linked during the session can make the count at its start too small.
        position = f"file {view.number}" + (f" of {session.total}" if view.number <= session.total else "")
        lines.append(_cut(f"== {position}: {f.mid}  {f.title} ==", width))
        # URLs are never cut: a reviewer copies or clicks them.
        lines.append(f"page:        {session.page_url()}")
        lines.append(f"thumbnail:   {f.thumb_url or '(none)'}")
        uploaded = f.uploaded_at.strftime("%Y-%m-%d %H:%M UTC") if f.uploaded_at else "(unknown)"
        lines.append(_cut(f"uploaded:    {uploaded}" + (f" by {f.uploader}" if f.uploader else ""), width))
        lines.append(_cut(f"categories:  {'; '.join(f.categories) or '(none)'}", width))
        description = " ".join(f.description.split())
        if len(description) > DESCRIPTION_CHARS:
            description = description[:DESCRIPTION_CHARS - 1] + "…"
        lines.append(_cut(f"description: {description or '(none)'}", width * 2))
        depicts = ", ".join(d.qid + (" (prominent)" if d.rank == "preferred" else "") for d in f.depicts)
        lines.append(_cut(f"depicts now: {depicts or '(nothing yet)'}", width))
        if any(c.random_weights for c in f.candidates):
            lines.append("WARNING: made by a linker with random weights - these suggestions mean nothing")
        lines.append("")
        lines.append("candidates:")
        for i, cand in enumerate(f.candidates):
            pointer = ">" if i == view.cursor else " "
            text = cand.label + (f" - {cand.description}" if cand.description else "")
            mark = f"  [{view.marks[i]}]" if view.marks[i] else ""
            row = f"{pointer} #{i + 1:<2} {cand.qid:<10} {format_score(cand.score):>6}  {text}"
            lines.append(_cut(row, width - len(mark)) + mark)
            signals = format_signals(cand.alpha, cand.probability)
            if signals:
                lines.append(_cut(f"        {signals}", width))
            if cand.notes:
                lines.append(_cut(f"        notes: {'; '.join(cand.notes)}", width))
        lines.append("")
        lines.extend(_cut(line, width) for line in KEY_LINES)
    if session.message:
        lines.append(f">> {session.message}")
    return "\n".join(lines) + "\n"


def _draw(session: ReviewSession, out: TextIO, clear: bool) -> None:
    width = max(40, shutil.get_terminal_size((100, 24)).columns)
    out.write((CLEAR if clear else "\n") + render(session, width) + PROMPT)
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
