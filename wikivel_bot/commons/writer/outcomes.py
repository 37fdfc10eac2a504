"""pywikibot and API errors of a write, mapped to outcomes in one place.

Every exception that leaves a write (or the re-read just before it) goes through
:func:`failure_for`, which sorts it into one of three kinds:

* **transient** — worth trying again later: replication lag (``maxlag``), rate limits,
  HTTP 5xx and timeouts (pywikibot has already retried them ``max_retries`` times), a
  read-only wiki, an edit conflict or a stale token (the next attempt re-reads the entity and
  gets a fresh revision and token), an entity that vanished between read and write (the
  re-read decides). Returned as ``Failed(reason, retry_after)`` with a delay that doubles per
  attempt, so a struggling wiki is not hammered.
* **permanent** — a human has to look: the page got protected, an abuse filter refused the
  edit, a change tag is not allowed, the statement was invalid, any error code we do not
  know. Returned as ``Failed(reason, None)``; the store leaves it as ``write_failed``.
* **fatal** — every further write would fail the same way (the bot is blocked, logged out,
  lacks the ``edit`` right, the site is misconfigured): :class:`WriteStopped` is raised so
  the run stops instead of burning through the queue's attempts.

Anything else (a bug in our code) is not caught here and propagates.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from wikivel_bot.commons.writer.one_shot import LagRefused, Unanswered
from wikivel_bot.errors import WikiError
from wikivel_bot.types import Failed

TRANSIENT = "transient"
PERMANENT = "permanent"
FATAL = "fatal"

# First retry delay in seconds per error code; doubled per attempt up to MAX_RETRY_S.
# Replication lag and rate limits clear in minutes; an edit conflict or a stale token only
# needs a fresh read, so it is retried soon.
BASE_DELAY_S = {
    "maxlag": 60.0,
    "ratelimited": 120.0,
    "actionthrottledtext": 120.0,
    "readonly": 300.0,
    "editconflict": 15.0,
    "badtoken": 15.0,
    "no-such-entity": 15.0,
    "missingtitle": 15.0,
    "failed-save": 60.0,
    "lockmanager-fail-conflict": 60.0,
}
DEFAULT_DELAY_S = 60.0
MAX_RETRY_S = 6 * 3600.0

TRANSIENT_CODES = frozenset(BASE_DELAY_S)
# The account cannot edit at all: stop the run, leave the queue as it is.
FATAL_CODES = frozenset({
    "blocked", "autoblocked", "globalblocking-blockedtext", "globalblocking-blockedtext-ip",
    "assertuserfailed", "assertbotfailed", "assertnameduserfailed", "notloggedin",
    "mwoauth-invalid-authorization", "writeapidenied",
})


@dataclass(frozen=True)
class ErrorKind:
    """How an exception is handled: ``kind`` (transient/permanent/fatal), a one-line
    ``reason`` for the audit trail, and the error code (``""`` when not an API error)."""

    kind: str
    reason: str
    code: str = ""

    @property
    def slot_exists(self) -> bool:
        """Wikibase's failed save of a new MediaInfo on a file that has one now: the edit's
        base revision had no structured data, so Wikibase created the entity afresh without
        a conflict check (``EntityLoadingHelper``, T267363) and ``WikiPageEntityStore``
        refused the slot that exists ("Can't create slot, it already exists: mediainfo").
        Nothing was saved; the writer re-reads and tries once more (``statement_writer``)."""
        return self.code == "failed-save" and "create slot, it already exists" in self.reason.lower()


class WriteStopped(WikiError):
    """The wiki refuses every write of this account (blocked, logged out, no rights)."""


def classify(exc: BaseException) -> Optional[ErrorKind]:
    """Sort an exception raised while re-reading or writing; None when it is not a wiki error.

    :param exc: what pywikibot (or requests underneath it) raised.
    """
    from pywikibot import exceptions as pe

    if isinstance(exc, pe.APIError):
        code = str(exc.code or "unknown")
        info = " ".join(str(exc.info or "").split())
        reason = f"{code}: {info}" if info else code
        if code in FATAL_CODES:
            return ErrorKind(FATAL, reason, code)
        if code in TRANSIENT_CODES or code.startswith("internal_api_error_"):
            return ErrorKind(TRANSIENT, reason, code)
        return ErrorKind(PERMANENT, reason, code)
    if isinstance(exc, pe.MaxlagTimeoutError):
        return ErrorKind(TRANSIENT, f"maxlag: {_text(exc)}", "maxlag")
    if isinstance(exc, (pe.NoUsernameError, pe.UserRightsError, pe.FatalServerError,
                        pe.SiteDefinitionError)):
        return ErrorKind(FATAL, f"{type(exc).__name__}: {_text(exc)}")
    if isinstance(exc, pe.EditConflictError):
        return ErrorKind(TRANSIENT, f"editconflict: {_text(exc)}", "editconflict")
    if isinstance(exc, pe.LockedPageError):
        return ErrorKind(PERMANENT, f"protectedpage: {_text(exc)}", "protectedpage")
    if isinstance(exc, (pe.ApiTimeoutError, pe.ServerError)):
        # pywikibot's own retries (5xx, timeouts, readonly, rate limits) are used up.
        return ErrorKind(TRANSIENT, f"server: {type(exc).__name__}: {_text(exc)}", "server")
    if isinstance(exc, (pe.NoPageError, pe.NoWikibaseEntityError)):
        # Deleted between the re-read and the write: the next re-read records the skip.
        return ErrorKind(TRANSIENT, f"missingtitle: {_text(exc)}", "missingtitle")
    if isinstance(exc, OSError):
        # requests' ConnectionError and friends: the network, not the wiki, failed.
        return ErrorKind(TRANSIENT, f"network: {type(exc).__name__}: {_text(exc)}", "network")
    if isinstance(exc, LagRefused):
        # Still lagged after the writer's own waits (commons.writer.edit_send): nothing applied.
        return ErrorKind(TRANSIENT, _text(exc), "maxlag")
    if isinstance(exc, Unanswered):
        # No answer and the statements are not on the page: not applied, tried again later.
        return ErrorKind(TRANSIENT, f"server: {_text(exc)}", "server")
    if isinstance(exc, WikiError):
        # Our own translated errors, e.g. Wikidata lookups for the hierarchy check.
        return ErrorKind(TRANSIENT, f"wiki: {_text(exc)}", "wiki")
    if isinstance(exc, pe.Error):
        # pywikibot wraps some failures in a bare Error naming only the page (e.g. a 500 or
        # a timeout while MediaInfo.get() re-reads the file): the cause decides, so a
        # transient re-read failure is retried like one on the write.
        cause = exc.__cause__
        if type(exc) is pe.Error and cause is not None:
            inner = classify(cause)
            if inner is not None:
                return inner
        return ErrorKind(PERMANENT, f"{type(exc).__name__}: {_text(exc)}")
    return None


def retry_delay(code: str, attempts: int) -> float:
    """Seconds to wait before the next attempt: the code's base delay, doubled per attempt.

    :param code: the error code (see :data:`BASE_DELAY_S`).
    :param attempts: write attempts of this pair so far (0 before the first).
    """
    base = BASE_DELAY_S.get(code, DEFAULT_DELAY_S)
    return min(base * (2 ** max(0, attempts)), MAX_RETRY_S)


def failure_for(exc: BaseException, attempts: int = 0) -> Failed:
    """The outcome of a write that raised ``exc``.

    :param exc: the exception.
    :param attempts: attempts already made for this pair (makes the retry delay grow).
    :raises WriteStopped: for errors that stop the whole run.
    :raises BaseException: ``exc`` itself when it is not a wiki error (a bug).
    """
    found = classify(exc)
    if found is None:
        raise exc
    if found.kind == FATAL:
        raise WriteStopped(f"writing stopped: {found.reason}") from exc
    if found.kind == TRANSIENT:
        return Failed(found.reason, retry_after=retry_delay(found.code, attempts))
    return Failed(found.reason, retry_after=None)


def _text(exc: BaseException) -> str:
    return " ".join(str(exc).split())[:300] or type(exc).__name__
