"""The one decision function of the web: the review page and ``POST /api/decisions`` both
call :func:`apply_decision`, which records through the same functions as the terminal review
(``review.actions.decide`` → ``Store.record_decision``; ``Store.undo_decision``), so a web
decision is the same row, with the reviewer's wiki user name and source ``web``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, Mapping, Optional

from wikivel_bot.config import WebSettings
from wikivel_bot.core.states import DECISION_TARGET
from wikivel_bot.errors import IllegalTransition, NotFound, UsageError
from wikivel_bot.queue import reviews, web_queries
from wikivel_bot.queue.store import Store
from wikivel_bot.review.actions import decide
from wikivel_bot.types import CandidateState, DecisionAction, is_qid, page_id_of
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
        "reject" | "skip" | "undo"}``.
    :return: 200 with the pair's new state; 400 bad input; 401 not logged in; 403 not allowed
        (blocked, not in an allowed group); 404 unknown file or pair; 409 decided elsewhere
        meanwhile (the body says by whom and what); 429 over the rate limit.
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
    qid = qid.upper()
    if not is_qid(qid):
        return _fail(400, f"item must be a Wikidata item id such as Q146, not {qid!r}")
    wait = limiter.allow(reviewer.name)
    if wait:
        return _fail(429, f"more than {web.decisions_per_minute} decisions a minute: wait {wait:.0f} s",
                     retry_after=int(wait) + 1)
    action = ACTIONS[word]
    if action is None:
        return _undo(store, reviewer, page_id, qid, mid)
    try:
        # No pre-check: the store finds, checks and changes the pair in one transaction
        # (on a server database every transaction and statement is a round trip, and this
        # runs on every decision); the rare failures are explained afterwards.
        decide(store, mid, [qid], action, reviewer.name, source=SOURCE, add_unproposed=False)
    except IllegalTransition as exc:
        return _conflict(store, page_id, qid, str(exc))
    except NotFound:
        return _not_found(store, page_id, qid, mid) or _fail(404, f"{qid} was never proposed for {mid}")
    except UsageError as exc:
        return _fail(400, str(exc))
    # Where the decision put the pair (the store checked the move in its transaction): no
    # second read needed.
    return Outcome(200, {"file": mid, "item": qid, "action": word, "state": DECISION_TARGET[action].value,
                         "prominent": action is DecisionAction.APPROVE_PROMINENT, "reviewer": reviewer.name})


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
        store.undo_decision(decision_id)
    except IllegalTransition as exc:
        return _conflict(store, page_id, qid, str(exc))
    except NotFound as exc:
        return _fail(404, str(exc))
    return Outcome(200, {"file": mid, "item": qid, "action": "undo", **_pair(store, page_id, qid)})


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
