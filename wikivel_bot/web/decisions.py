"""The one decision function of the web: the review page and ``POST /api/decisions`` both
call :func:`apply_decision`, which records through the same functions as the terminal review
(``review.actions.decide`` → ``Store.record_decision``; ``Store.undo_decision``), so a web
decision is the same row, with the reviewer's wiki user name and source ``web``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, Mapping, Optional, Union

from wikivel_bot.config import WebSettings
from wikivel_bot.core.states import DECISION_TARGET
from wikivel_bot.errors import DecisionConflict, IllegalTransition, NotFound, UsageError
from wikivel_bot.queue import reviews, web_queries
from wikivel_bot.queue.store import Store
from wikivel_bot.queue.store.decisions import Seen
from wikivel_bot.review.actions import decide, in_flight_message
from wikivel_bot.types import CandidateState, DecisionAction, is_qid, mid_of, page_id_of
from wikivel_bot.web.reviewer import Reviewer
from wikivel_bot.web.security import RateLimiter

# The API's action words (the page sends the same ones).
ACTIONS: Dict[str, Optional[DecisionAction]] = {
    "approve": DecisionAction.APPROVE,
    "prominent": DecisionAction.APPROVE_PROMINENT,
    "reject": DecisionAction.REJECT,
    "skip": DecisionAction.SKIP,
    "undo": None,
}
SOURCE = "web"


@dataclass(frozen=True)
class Outcome:
    """What a decision request came to: an HTTP status and the JSON body to answer with."""

    status: int
    body: Dict[str, Any]


def _fail(status: int, message: str, **extra: Any) -> Outcome:
    return Outcome(status, {"error": message, **extra})


def apply_decision(store: Store, web: WebSettings, limiter: RateLimiter, reviewer: Optional[Reviewer],
                   payload: Any) -> Outcome:
    """Check and record one decision.

    :param reviewer: the logged-in user (None: 401).
    :param payload: ``{"file": "M123", "item": "Q146", "action": "approve" | "prominent" |
        "reject" | "skip" | "undo", "seen": {"state": "proposed", "reviewer": null,
        "prominent": false}}``: ``seen`` is the pair as the page showed it (default: waiting
        for review); the pair changes only if it is still so.
    :return: 200 with the pair's new state (``overrode``: whose decision an operator's
        replaced); 400 bad input; 401 not logged in; 403 not allowed (blocked, not in an
        allowed group, or a partial block naming this file); 404 unknown file or pair; 409
        decided elsewhere meanwhile, or decided by another reviewer and this is no operator (the body says by whom and what; nothing
        changed); 429 over the rate limit.
    """
    if reviewer is None:
        return _fail(401, "log in first (GET /login)")
    if not reviewer.may_decide(web):
        return _fail(403, reviewer.why_not(web))
    if not isinstance(payload, Mapping):
        return _fail(400, "send a JSON object: {\"file\": \"M123\", \"item\": \"Q146\", \"action\": \"approve\"}")
    mid, qid, word = (str(payload.get(k) or "").strip() for k in ("file", "item", "action"))
    if word not in ACTIONS:
        return _fail(400, f"unknown action {word!r} (use {', '.join(ACTIONS)})")
    try:
        page_id = page_id_of(mid)
    except ValueError:
        return _fail(400, f"file must be an M-id such as M123, not {mid!r}")
    mid = mid_of(page_id)  # "m10001", as people type it, answered as M10001
    qid = qid.upper()
    if not is_qid(qid):
        return _fail(400, f"item must be a Wikidata item id such as Q146, not {qid!r}")
    seen = seen_of(payload.get("seen"))
    if isinstance(seen, str):
        return _fail(400, seen)
    if reviewer.partial is not None and reviewer.partial.file_pages():
        # A partial block naming File: pages: not these files (the bot's edit would be theirs).
        refused = reviewer.why_not_file(page_id, web_queries.file_title(store, page_id) or "")
        if refused:
            return _fail(403, refused)
    wait = limiter.allow(reviewer.name)
    if wait:
        return _fail(429, f"more than {web.decisions_per_minute} decisions a minute: wait {wait:.0f} s",
                     retry_after=int(wait) + 1)
    action = ACTIONS[word]
    if action is None:
        return _undo(store, reviewer, page_id, qid, mid)
    override = reviewer.is_operator(web)
    try:
        # No pre-check: the store finds, checks and changes the pair in one transaction
        # (on a server database every transaction and statement is a round trip, and this
        # runs on every decision); the rare failures are explained afterwards.
        (decided,) = decide(store, mid, [qid], action, reviewer.name, source=SOURCE, add_unproposed=False,
               seen=seen, override=override)
    except DecisionConflict as exc:
        return _fail(409, str(exc), state=exc.state, prominent=exc.prominent,
                     reviewer=exc.reviewer if exc.state != CandidateState.PROPOSED.value else None)
    except IllegalTransition as exc:
        return _conflict(store, page_id, qid, str(exc))
    except NotFound:
        return _not_found(store, page_id, qid, mid) or _fail(404, f"{qid} was never proposed for {mid}")
    except UsageError as exc:
        return _fail(400, str(exc))
    # Where the decision put the pair (the store checked the move in its transaction): no
    # second read needed.
    done: Dict[str, Any] = {"file": mid, "item": qid, "action": word, "state": DECISION_TARGET[action].value,
                            "prominent": action is DecisionAction.APPROVE_PROMINENT, "reviewer": reviewer.name}
    if action is DecisionAction.SKIP:
        done["reviewer"] = None  # a skip is no decision: the pair still waits for review
    if seen.decided and seen.reviewer != reviewer.name:
        done["overrode"] = seen.reviewer  # the store applied it as seen: an operator's override
    if decided.in_flight:
        # The pair was being written: the page says what follows instead of a plain success.
        done["message"] = decided.in_flight
    return Outcome(200, done)


def seen_of(raw: Any) -> Union[Seen, str]:
    """The pair as the page showed it (``{"state", "reviewer", "prominent"}``; absent: a
    pair waiting for review), or what is wrong with it."""
    if raw is None:
        return Seen()
    if not isinstance(raw, Mapping):
        return 'seen must be an object such as {"state": "approved", "reviewer": "Alice", "prominent": false}'
    try:
        state = CandidateState(str(raw.get("state") or "proposed"))
    except ValueError:
        return f"seen.state must be one of {', '.join(s.value for s in CandidateState)}"
    who, prominent = raw.get("reviewer"), raw.get("prominent")
    if who is not None and not isinstance(who, str) or prominent is not None and not isinstance(prominent, bool):
        return "seen.reviewer must be a user name or null, seen.prominent true, false or null"
    return Seen(state, (who or "") if state is not CandidateState.PROPOSED else "", prominent)


def _not_found(store: Store, page_id: int, qid: str, mid: str) -> Optional[Outcome]:
    """404 when the file is not queued or the item was never proposed for it; else None."""
    file_known, state = web_queries.pair_state(store, page_id, qid)
    if not file_known:
        return _fail(404, f"{mid} is not in the queue")
    if state is None:
        return _fail(404, f"{qid} was never proposed for {mid}")
    return None


def _undo(store: Store, reviewer: Reviewer, page_id: int, qid: str, mid: str) -> Outcome:
    """Take back the reviewer's newest decision on the pair, if it is still the newest."""
    missing = _not_found(store, page_id, qid, mid)
    if missing is not None:
        return missing
    decision_id = web_queries.newest_decision(store, page_id, qid, reviewer.name)
    if decision_id is None:
        return _conflict(store, page_id, qid, f"no decision of {reviewer.name} on {mid} {qid} to undo")
    try:
        recorded = store.undo_decision(decision_id)
    except IllegalTransition as exc:
        return _conflict(store, page_id, qid, str(exc))
    except NotFound as exc:
        return _fail(404, str(exc))
    body = {"file": mid, "item": qid, "action": "undo", **_pair(store, page_id, qid)}
    writing = in_flight_message(mid, qid, getattr(recorded, "in_flight", ""))
    if writing:
        body["message"] = writing
    return Outcome(200, body)


def _pair(store: Store, page_id: int, qid: str) -> Dict[str, Any]:
    now = reviews.pair_status(store, page_id, qid)
    return {"state": now.state.value if now.state else None, "prominent": now.prominent,
            "reviewer": now.reviewer or None}


def _conflict(store: Store, page_id: int, qid: str, message: str) -> Outcome:
    """409: the pair moved on while the reviewer looked at it; say where it is now."""
    pair = _pair(store, page_id, qid)
    if pair["state"] == CandidateState.PROPOSED.value:
        pair["reviewer"] = None
    return _fail(409, message, **pair)
