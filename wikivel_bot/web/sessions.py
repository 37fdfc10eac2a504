"""Logins that end, and blocks that bite: the server side of the web review's session.

Flask's session is a signed cookie the server cannot take back: deleting it at logout
leaves any saved copy working. So the cookie carries only a random session id; the queue
database keeps its SHA-256 with the reviewer and an absolute end (``web.session_hours``
after login, never extended by use). ``/logout`` deletes the row, and a replayed cookie
then names no login: the API answers 401, pages show the login link. The rows are shared
by every web worker.

The wiki profile (blocked, groups) is read at login and then again, from the wiki's API
(``list=users``), once ``web.profile_check_minutes`` have passed: on the first request
after that time, which includes any decision. A reviewer blocked on the wiki, or no
longer in an allowed group, is refused (403 naming why, with the wiki's block reason) from
then on. The OAuth profile says only *that* a user is blocked, so a login of a blocked user
reads the reason at once. A partial block's restrictions are read with it (``list=blocks``)
and kept in the row: one that covers files is a block here, one naming File: pages takes
only those files (:mod:`wikivel_bot.web.blocks`). Restrictions that cannot be read count as
a profile that cannot be read: a partial block must not slip through either. When the wiki
cannot be reached, pages keep the last profile but decisions are refused (503) until the
profile could be read again: a block must not slip through an outage. The failed read is
noted in the session's row, and the wiki is not asked again for that login before
``PROFILE_RETRY_S`` have passed: during an outage a page view does not wait for a wiki that
is down, nor does every click add to its load.
"""

from __future__ import annotations

import hashlib
import math
import secrets
from dataclasses import dataclass, replace
from datetime import datetime, timedelta, timezone
from typing import Any, Dict, Optional, Tuple

import requests
from flask import Response, g, request, session

from wikivel_bot.queue import web_sessions
from wikivel_bot.web.blocks import PartialBlock, from_blocks
from wikivel_bot.web.context import web
from wikivel_bot.web.reviewer import Reviewer
from wikivel_bot.web.security import STATE_CHANGING, refuse

SID = "sid"
# The keys of the tokens this browser's login handed to the wiki's pages (ended at logout).
TOKENS = "tokens"
MAX_TOKENS = 8
# A reviewer waits for this read on the request that triggers it: short, one try.
PROFILE_TIMEOUT_S = 5.0
# After a failed read, the pause before the wiki is asked again for the same login: short
# enough that decisions resume soon after the wiki does, long enough that an outage costs
# the wiki one request per login and pause, not one per page view (and each page view no
# timeout). Decisions answer 503 meanwhile; pages are served with the last profile.
PROFILE_RETRY_S = 30


class ProfileUnavailable(Exception):
    """The wiki did not answer the profile read (the message names how, without secrets)."""


@dataclass(frozen=True)
class Profile:
    """A reviewer's account as the wiki describes it now."""

    groups: Tuple[str, ...]
    # No decisions at all: a sitewide block, or a partial one that covers files.
    blocked: bool
    reason: str = ""
    # A partial block's restrictions (None: no block, or a sitewide one).
    partial: Optional[PartialBlock] = None


class RestrictionsUnavailable(ProfileUnavailable):
    """``list=users`` says the block is partial, but ``list=blocks`` gave no usable
    restrictions. ``profile`` is what is known: blocked, with the wiki's reason."""

    def __init__(self, why: str, profile: Profile) -> None:
        super().__init__(why)
        self.profile = profile


def _key(sid: str) -> str:
    """What the database keeps of a session id: its SHA-256 (a leaked row opens nothing)."""
    return hashlib.sha256(sid.encode()).hexdigest()


def now() -> datetime:
    """The app's clock as naive UTC (the database's times)."""
    return datetime.fromtimestamp(web().clock(), timezone.utc).replace(tzinfo=None)


def start(reviewer: Reviewer) -> None:
    """Open a login for ``reviewer`` (the OAuth callback, on a cleared session)."""
    ctx = web()
    reviewer = _with_block(reviewer)
    sid = secrets.token_urlsafe(32)
    begun = now()
    web_sessions.open_session(ctx.store, _key(sid), reviewer.name, reviewer.user_id, reviewer.groups,
                              reviewer.blocked, begun, begun + timedelta(hours=ctx.settings.web.session_hours),
                              block_reason=reviewer.block_reason, block_restrictions=_restrictions_json(reviewer))
    session[SID] = sid
    session.permanent = True


def _with_block(reviewer: Reviewer) -> Reviewer:
    """The OAuth profile says only *that* a user is blocked: ask the wiki why, so the page
    can say it, and whether the block is partial, so it takes only what it covers. Best
    effort: when the wiki does not answer, or not the restrictions, the login stands
    blocked until the next check."""
    if not reviewer.blocked or reviewer.block_reason:
        return reviewer
    try:
        profile = read_profile(profile_api(web().oauth_base), reviewer.name, web().user_agent)
    except RestrictionsUnavailable as exc:
        profile = exc.profile
    except ProfileUnavailable:
        return reviewer
    if profile is None or not profile.blocked and profile.partial is None:
        return reviewer  # no block any more: the OAuth flag stands until the next check
    return replace(reviewer, blocked=profile.blocked, block_reason=profile.reason, partial=profile.partial)


def _restrictions_json(reviewer: Reviewer) -> Optional[Dict[str, Any]]:
    return reviewer.partial.to_json() if reviewer.partial is not None else None


def end() -> None:
    """End this browser's login on the server (every copy of the cookie) and forget it,
    with every token the login handed to the wiki's pages (:func:`start_token`)."""
    sid = session.get(SID)
    if sid:
        web_sessions.end_session(web().store, _key(str(sid)))
    for key in session.get(TOKENS) or ():
        web_sessions.end_session(web().store, str(key))
    session.clear()


def start_token(reviewer: Reviewer) -> str:
    """A token for the user script on the wiki's pages, where this tool's cookie does not
    go (browsers block third-party cookies): a login of its own, kept like the cookie's
    (SHA-256 only, same end, same profile re-reads and blocks), ended by ``/logout`` in
    this browser (its key is kept in the signed session) or by the script's own log-out."""
    ctx = web()
    token = secrets.token_urlsafe(32)
    begun = now()
    found = web_sessions.find_session(ctx.store, _key(str(session.get(SID) or "")), begun)
    ends = found.expires_at if found is not None else begun + timedelta(hours=ctx.settings.web.session_hours)
    web_sessions.open_session(ctx.store, _key(token), reviewer.name, reviewer.user_id, reviewer.groups,
                              reviewer.blocked, begun, ends, block_reason=reviewer.block_reason,
                              block_restrictions=_restrictions_json(reviewer))
    # The newest few: a reviewer who logs in on many pages does not grow the cookie forever.
    session[TOKENS] = [*list(session.get(TOKENS) or ())[-(MAX_TOKENS - 1):], _key(token)]
    return token


def end_token() -> bool:
    """End the login of this request's token (the script's log-out); False without one."""
    token = bearer_token()
    return bool(token) and web_sessions.end_session(web().store, _key(token))


def bearer_token() -> str:
    """The token of an ``Authorization: Bearer …`` header ("" when there is none)."""
    scheme, _, token = request.headers.get("Authorization", "").partition(" ")
    return token.strip() if scheme.lower() == "bearer" else ""


def profile_api(oauth_base: str) -> str:
    """The action API of the wiki that logged the reviewer in (``…/w/rest.php`` →
    ``…/w/api.php``): the same wiki, so the same groups and blocks as at login."""
    return oauth_base.rsplit("/", 1)[0] + "/api.php"


def read_profile(api_url: str, name: str, user_agent: str) -> Optional[Profile]:
    """The profile of the user ``name`` as the wiki says now; None when the wiki has no such
    user (renamed or gone). A partial block's restrictions cost a second request
    (``list=blocks``), only for a user who has one.

    :raises ProfileUnavailable: no usable answer (:class:`RestrictionsUnavailable`: the
        block is partial and its restrictions could not be read).
    """
    params = {"action": "query", "list": "users", "ususers": name, "usprop": "groups|blockinfo",
              "format": "json", "formatversion": "2"}
    try:
        answer = requests.get(api_url, params=params, headers={"User-Agent": user_agent},
                              timeout=PROFILE_TIMEOUT_S)
        answer.raise_for_status()
        users: Any = answer.json()["query"]["users"]
        entry = users[0]
    except (requests.RequestException, ValueError, KeyError, IndexError, TypeError) as exc:
        raise ProfileUnavailable(type(exc).__name__) from None
    if not isinstance(entry, dict) or "missing" in entry or "invalid" in entry:
        return None
    groups = tuple(str(x) for x in entry.get("groups") or ())
    if "blockid" not in entry:
        return Profile(groups, blocked=False)
    blocked = Profile(groups, blocked=True, reason=str(entry.get("blockreason") or "")[:1000])
    if not entry.get("blockpartial"):
        return blocked
    try:
        partial = _read_restrictions(api_url, name, user_agent)
    except ProfileUnavailable as exc:
        raise RestrictionsUnavailable(f"its partial block's restrictions could not be read: {exc}", blocked) from None
    if partial is None:  # another of the user's blocks is sitewide
        return blocked
    return replace(blocked, blocked=bool(partial.covers_files()), partial=partial)


def _read_restrictions(api_url: str, name: str, user_agent: str) -> Optional[PartialBlock]:
    """The union of the user's partial blocks (``list=blocks``); None when one is sitewide.

    :raises ProfileUnavailable: no usable answer.
    """
    params = {"action": "query", "list": "blocks", "bkusers": name, "bkprop": "id|flags|restrictions",
              "bklimit": "max", "format": "json", "formatversion": "2"}
    try:
        answer = requests.get(api_url, params=params, headers={"User-Agent": user_agent},
                              timeout=PROFILE_TIMEOUT_S)
        answer.raise_for_status()
        return from_blocks(answer.json()["query"]["blocks"])
    except (requests.RequestException, ValueError, KeyError, IndexError, TypeError) as exc:
        raise ProfileUnavailable(type(exc).__name__) from None


def load() -> Optional[Response]:
    """The ``before_request`` hook: ``g.reviewer`` from this browser's open login, with the
    profile re-read from the wiki when it is due. Runs before the CSRF check, which asks
    ``g.reviewer`` whether an API call comes from a login."""
    g.reviewer = None
    # The user script on the wiki's pages sends a token instead of the cookie; a request
    # with an Authorization header is judged by it alone (wikivel_bot.web.security's
    # origin rule applies to it).
    g.via_token = "Authorization" in request.headers
    sid = bearer_token() if g.via_token else session.get(SID)
    if not sid or request.endpoint == "static":
        return None
    ctx = web()
    key, moment = _key(str(sid)), now()
    found = web_sessions.find_session(ctx.store, key, moment)
    if found is None:  # logged out, expired, or never ours: the cookie is worth nothing
        if not g.via_token:
            session.clear()
        return None
    try:
        partial = PartialBlock.from_json(found.block_restrictions)
    except (ValueError, TypeError, KeyError):  # a damaged row: no decisions until the next read
        partial, found = None, replace(found, blocked=True)
    reviewer = Reviewer(name=found.user_name, user_id=found.user_id, groups=found.groups, blocked=found.blocked,
                        block_reason=found.block_reason, partial=partial)
    if moment - found.checked_at >= timedelta(minutes=ctx.settings.web.profile_check_minutes):
        wait = retry_in(found.check_failed_at, moment)
        if wait:  # the wiki did not answer a moment ago: not asked again yet
            if request.method in STATE_CHANGING:
                return _unchecked(reviewer.name, "the wiki did not answer", wait)
            g.reviewer = reviewer
            return None
        try:
            profile = read_profile(profile_api(ctx.oauth_base), reviewer.name, ctx.user_agent)
        except ProfileUnavailable as exc:
            web_sessions.note_check_failed(ctx.store, key, moment)
            if request.method in STATE_CHANGING:
                return _unchecked(reviewer.name, str(exc), PROFILE_RETRY_S)
        else:
            if profile is None:
                web_sessions.end_session(ctx.store, key)
                if not g.via_token:
                    session.clear()
                return None
            reviewer = replace(reviewer, groups=profile.groups, blocked=profile.blocked, block_reason=profile.reason,
                               partial=profile.partial)
            web_sessions.update_profile(ctx.store, key, profile.groups, profile.blocked, moment,
                                        block_reason=profile.reason, block_restrictions=_restrictions_json(reviewer))
    g.reviewer = reviewer
    return None


def retry_in(failed_at: Optional[datetime], moment: datetime) -> int:
    """Whole seconds until the wiki may be asked again for a profile whose read failed at
    ``failed_at`` (None: never, or since succeeded); 0 when it may be asked at ``moment``.
    A note from the future (a worker's clock ahead of this one's) does not hold it back."""
    if failed_at is None or failed_at > moment:
        return 0
    left = PROFILE_RETRY_S - (moment - failed_at).total_seconds()
    return math.ceil(left) if left > 0 else 0


def _unchecked(name: str, why: str, wait: int) -> Response:
    """The 503 for a decision while the profile is due but unread (``Retry-After`` too)."""
    answer = refuse(503, f"cannot re-check {name}'s wiki account now ({why}): try again in {wait} s")
    answer.headers["Retry-After"] = str(wait)
    return answer
