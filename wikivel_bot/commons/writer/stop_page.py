"""The kill switch: a wiki page anyone trusted can edit to stop the bot's writing.

Commons:Bots asks bots to have one. The page must contain exactly the configured "run" text
(surrounding whitespace ignored) for writing to go on; anything else — other text, an empty
page, a deleted page, a failure to read it — pauses writing, because a bot that cannot
tell whether it was asked to stop must assume it was.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

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
