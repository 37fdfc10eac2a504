"""A write request that leaves once: never resent blindly by pywikibot.

pywikibot resends a request by itself after a read timeout, an HTTP 5xx, an unreadable
answer, a database error and a ``maxlag`` answer — with the same parameters, so the same
``baserevid``. For an edit whose answer was merely late that is a second edit: Wikibase
patches a change made against a stale ``baserevid`` onto the latest revision whenever it
does not overlap (``EditEntity::fixEditConflict``), and a new statement never overlaps. So
the writer's edits go through :func:`send_once` instead, which turns each of pywikibot's
resends into an exception for the writer to decide on:

* :class:`Unanswered` — the request may have been applied (timeout, 5xx, garbled answer,
  a retryable database error): the writer re-reads the file and looks for the statement
  GUIDs it chose itself before anything is sent again.
* :class:`LagRefused` — a ``maxlag`` answer: the wiki refused before doing anything, so the
  writer waits the lag out and sends again, after its last check.

A ``ratelimited`` answer is raised as pywikibot's ``APIError`` (nothing was applied; the
writer retries it later with its own back-off). A ``badtoken`` answer (refused before
anything was done) is still resent by pywikibot with a fresh token at once.
"""

from __future__ import annotations

import functools
import json
import re
from typing import Any, Dict

from wikivel_bot.errors import WikiError

__all__ = ["LagRefused", "Unanswered", "send_once"]

_LAG = re.compile(r"(?P<lag>\d+(?:\.\d+)?) seconds? lagged")


class Unanswered(WikiError):
    """The request left but no usable answer came back: it may or may not be applied."""


class LagRefused(WikiError):
    """The wiki answered ``maxlag``: nothing was done; ``lag`` is the reported lag (s)."""

    def __init__(self, message: str, lag: float) -> None:
        super().__init__(message)
        self.lag = lag


@functools.lru_cache(maxsize=1)
def _request_class() -> Any:
    from pywikibot.data import api

    class OneShotRequest(api.Request):
        """pywikibot's Request whose every "wait, then resend" raises instead."""

        def wait(self, delay: Any = None, **kwargs: Any) -> None:
            # Called by pywikibot before each resend of an answer it could not use.
            raise Unanswered(f"no usable answer to {self.action} (not resent; the writer "
                             "re-reads the file to see whether it was applied)")

        def _handle_warnings(self, result: Dict[str, Any]) -> bool:
            # Wikibase's "patched into the latest version" (wikibase-conflict-patched) is
            # for the writer, which re-reads the file for it (edit_send): pywikibot would
            # print it as a warning "of unknown format". The answer keeps it.
            warnings = result.get("warnings") if isinstance(result, dict) else None
            if isinstance(warnings, dict):
                shown = {mod: w for mod, w in warnings.items() if "conflict-patched" not in json.dumps(w)}
                return bool(super()._handle_warnings({**result, "warnings": shown}))
            return bool(super()._handle_warnings(result))

        def _json_loads(self, response: Any) -> Any:
            result = super()._json_loads(response)
            error = result.get("error") if isinstance(result, dict) else None
            if isinstance(error, dict) and error.get("code") == "maxlag":
                lag = error.get("lag")
                if not isinstance(lag, (int, float)):
                    found = _LAG.search(str(error.get("info") or ""))
                    lag = float(found["lag"]) if found else 5.0
                raise LagRefused(f"maxlag: {error.get('info') or 'replication lag'}", float(lag))
            if isinstance(error, dict) and error.get("code") == "ratelimited":
                # Refused before anything was done: an error with its own back-off, not a
                # "no answer" (pywikibot would wait and resend).
                from pywikibot.exceptions import APIError

                raise APIError("ratelimited", str(error.get("info") or "rate limited"))
            return result

    return OneShotRequest


def send_once(site: Any, **params: Any) -> Dict[str, Any]:
    """Submit one write request (``site``'s API, pywikibot's throttle, login, simulate and
    token handling) without any resend of pywikibot's own; its parsed answer.

    :raises Unanswered: no usable answer (it may have been applied).
    :raises LagRefused: the wiki refused for replication lag (nothing was applied).
    :raises pywikibot.exceptions.APIError: any other error answer, as pywikibot raises it.
    """
    return _request_class().create_simple(site, **params).submit()
