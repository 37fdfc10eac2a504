"""The kill switch: a wiki page anyone trusted can edit to stop the bot's writing.

Commons:Bots asks bots to have one. The page must contain exactly the configured "run" text
(surrounding whitespace ignored) for writing to go on; anything else — other text, an empty
page, a deleted page, a failure to read it — pauses writing, because a bot that cannot
tell whether it was asked to stop must assume it was.

The daemon reads it before each write round (:func:`check_stop_page`); every edit the bot
makes — a group write, a follow-up, a twin removal, a revert, from the daemon or from the
``write`` and ``revert`` commands — reads it again right before its request leaves
(:class:`StopGuard`), and a page that says stop raises :class:`WritingPaused`: the run ends
there, its claims released, nothing recorded as failed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Optional

import pywikibot

from wikivel_bot.commons.api import translated_errors
from wikivel_bot.errors import WikiError


@dataclass(frozen=True)
class StopCheck:
    """``paused`` with a human-readable ``reason`` when writing must wait."""

    paused: bool
    reason: str = ""


def check_stop_page(site: Any, title: str, run_text: str) -> StopCheck:
    """Read the stop page now (no cache) and decide.

    :param title: e.g. ``User:WikivelBot/stop``; empty = no kill switch configured.
    :param run_text: the content that means "keep writing".
    """
    if not title:
        return StopCheck(False)
    try:
        with translated_errors(site, f"reading the stop page {title}"):
            page = pywikibot.Page(site, title)
            if not page.exists():
                return StopCheck(True, f"stop page {title} does not exist")
            text = page.get(force=True)
    except WikiError as exc:
        return StopCheck(True, f"stop page {title} could not be read: {exc}")
    if text.strip() == run_text.strip():
        return StopCheck(False)
    shown: Optional[str] = " ".join(text.split())[:120]
    return StopCheck(True, f"stop page {title} says {shown!r} (writing needs {run_text!r})")


class WritingPaused(WikiError):
    """The stop page says stop (or cannot be read): no further edit leaves this run."""


class StopGuard:
    """The stop page, read before every edit; calling it raises :class:`WritingPaused` when
    writing must wait. An empty ``title`` (no kill switch configured) reads nothing."""

    def __init__(self, site: Any, title: str, run_text: str,
                 check: Callable[[Any, str, str], StopCheck] = check_stop_page) -> None:
        self.site = site
        self.title = title
        self.run_text = run_text
        self._check = check

    def __call__(self) -> None:
        if not self.title:
            return
        found = self._check(self.site, self.title, self.run_text)
        if found.paused:
            raise WritingPaused(f"writing paused: {found.reason}")


def no_stop_page() -> None:
    """The guard of a writer without a kill switch (tests, tools that never edit)."""
