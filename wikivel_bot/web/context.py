"""What every request handler needs, built once by :func:`wikivel_bot.web.app.create_app`."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, List, Optional, Protocol

from flask import current_app, g

from wikivel_bot.config import Settings
from wikivel_bot.core.safety import ItemCheck
from wikivel_bot.queue.store import Store
from wikivel_bot.web.reviewer import Reviewer
from wikivel_bot.web.secrets_file import WebSecrets
from wikivel_bot.web.security import RateLimiter
from wikivel_bot.wikidata.agent import WEB_TOOL, user_agent
from wikivel_bot.wikidata.client import WikidataClient

if TYPE_CHECKING:
    from wikivel_bot.labels.labelset import LabelSet

# Reverts a batch as an operator: (batch id, operator name) -> lines to show.
Reverter = Callable[[str, str], List[str]]


class Suggester(Protocol):
    """The resident suggestion service as the web sees it (``resident.service.ResidentSuggester``,
    built by the CLI: the web imports neither the linker nor the wiki's adapters)."""

    @property
    def version(self) -> str:
        """The running linker's version."""

    def suggest(self, source: str, timeout_s: float = ...) -> Any:
        """The answer for one file; raises an exception with ``retry_after`` when busy."""

    def queue_file(self, source: str) -> Any:
        """Put the file's current suggestions into the review queue; its answer, queued."""


@dataclass
class WebContext:
    """The queue, the settings and the helpers of one web app."""

    store: Store
    settings: Settings
    secrets: WebSecrets
    limiter: RateLimiter
    items: Optional[WikidataClient] = None
    # The label set whose texts (in labels.languages) the page shows for the items it keeps.
    labels: Optional["LabelSet"] = None
    # The safety rules as configured now (core.safety.item_check over the label set): queued
    # pairs whose item they withhold are not shown, whatever the rules were at link time.
    safety: Optional[ItemCheck] = None
    reverter: Optional[Reverter] = None
    oauth_base: str = ""
    user_agent: str = field(default_factory=lambda: user_agent(tool=WEB_TOOL))
    extra: dict = field(default_factory=dict)
    # GET /api/suggest: the resident linker (None: suggestions are off) and its per-client limit.
    suggester: Optional[Suggester] = None
    suggest_limiter: Optional[RateLimiter] = None
    # Wall-clock seconds for the login lifetime and the profile re-check (tests move it).
    clock: Callable[[], float] = time.time


def web() -> WebContext:
    """The context of the app handling the current request."""
    ctx: WebContext = current_app.extensions["wikivel"]
    return ctx


def current_reviewer() -> Optional[Reviewer]:
    """Who is logged in on this request (an open login, its wiki profile re-read when due:
    :func:`wikivel_bot.web.sessions.load`), or None."""
    found: Optional[Reviewer] = g.get("reviewer")
    return found
