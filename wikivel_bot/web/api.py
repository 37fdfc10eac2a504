"""The JSON API: what the page uses, and what other tools and gadgets may use.

* ``GET /api/queue`` — files waiting for review with their pairs, paged by ``after``;
  filters ``category``, ``item``, ``linker``, ``min_score``/``max_score`` (a score band),
  ``calibrated=1`` (only suggestions reaching ``linker.calibrated``'s threshold),
  ``state`` (``proposed`` by default; any pair state, or ``all``), ``limit``, ``uselang``.
* ``GET /api/files/<M-id>`` — one file with every pair and its evidence.
* ``GET /api/stats`` — the queue's counts, everyone's decisions and (logged in) yours.
* ``POST /api/decisions`` — ``{"file", "item", "action"}`` with ``X-CSRF-Token``
  (see :func:`wikivel_bot.web.decisions.apply_decision` for the answers).

Reading needs no login; deciding does.
"""

from __future__ import annotations

import math
from dataclasses import replace
from datetime import datetime
from typing import Any, Dict, Optional, Tuple

from flask import Blueprint, Response, jsonify, request

from wikivel_bot.core.review_rules import ReviewFile, ReviewFilter
from wikivel_bot.errors import WikivelError
from wikivel_bot.queue import web_queries
from wikivel_bot.types import CandidateState, is_qid, page_id_of
from wikivel_bot.web.context import current_reviewer, web
from wikivel_bot.web.decisions import apply_decision
from wikivel_bot.web.items import items_in
from wikivel_bot.web.views import file_view

bp = Blueprint("api", __name__, url_prefix="/api")
MAX_LIMIT = 100
# ``after`` is a files.id (a BIGINT): anything larger cannot be one, and would overflow the
# database driver's integer (an OverflowError, a 500) if it reached the query.
MAX_AFTER = 2**63 - 1


class BadRequest(ValueError):
    """A query parameter that cannot be used (400, with this message)."""


def _json(body: Dict[str, Any], status: int = 200) -> Response:
    answer = jsonify(body)
    answer.status_code = status
    return answer


def uselang() -> str:
    """The reviewer's language: ``uselang``, else the browser's first, else English."""
    lang = (request.args.get("uselang") or "").strip().lower()
    if not lang and request.accept_languages:
        lang = (request.accept_languages.best or "").split("-")[0].lower()
    return lang if lang.replace("-", "").isalnum() and len(lang) <= 20 else "en"


def views(files: Any) -> list:
    """Files as the API shows them, with items in the reviewer's language."""
    ctx = web()
    files = list(files)
    qids = {c.qid for f in files for c in f.candidates} | {d.qid for f in files for d in f.depicts}
    items = items_in(qids, uselang(), ctx.labels, ctx.items)
    site = ctx.settings.site
    return [file_view(f, items, site.api_url, site.name, thresholds()) for f in files]


def thresholds() -> Any:
    """The calibrated thresholds of ``linker.calibrated`` (read once), or None."""
    ctx = web()
    path = ctx.settings.linker.calibrated
    if not path:
        return None
    if ctx.extra.get("thresholds_path") != path:
        from wikivel_bot.liveeval.thresholds import load_thresholds

        ctx.extra["thresholds"] = load_thresholds(path)
        ctx.extra["thresholds_path"] = path
    return ctx.extra["thresholds"]


def _number(name: str) -> Optional[float]:
    """A finite decimal number (ASCII: ``float`` also takes other scripts' digits)."""
    raw = request.args.get(name, "").strip()
    if not raw:
        return None
    try:
        value = float(raw) if raw.isascii() else math.nan
    except ValueError:
        value = math.nan
    if not math.isfinite(value):
        raise BadRequest(f"{name} must be a number, not {raw[:40]!r}")
    return value


def _whole(name: str, default: int, low: int, high: int) -> int:
    """A whole number in ``[low, high]`` given in ASCII digits (``int`` also takes ``"١٢"``)."""
    raw = (request.args.get(name) or "").strip()
    if not raw:
        return default
    if not (raw.isascii() and raw.isdigit()) or len(raw) > 19 or not low <= int(raw) <= high:
        raise BadRequest(f"{name} must be a whole number between {low} and {high}, not {raw[:40]!r}")
    return int(raw)


def parse_query() -> Tuple[web_queries.QueueQuery, int, int]:
    """(query, after, limit) from the request's parameters. :raises BadRequest:"""
    ctx = web()
    state = (request.args.get("state") or "proposed").strip().lower()
    if state == "all":
        states = tuple(CandidateState)
    else:
        try:
            states = (CandidateState(state),)
        except ValueError:
            known = ", ".join(s.value for s in CandidateState)
            raise BadRequest(f"unknown state {state!r} (use {known} or all)") from None
    item = (request.args.get("item") or "").strip().upper()
    if item and not is_qid(item):
        raise BadRequest(f"item must be a Wikidata item id such as Q146, not {item!r}")
    after = _whole("after", 0, 0, MAX_AFTER)
    limit = _whole("limit", min(ctx.settings.web.page_size, MAX_LIMIT), 1, MAX_LIMIT)
    flt = ReviewFilter(states=states, min_score=_number("min_score"),
                       category=(request.args.get("category") or "").strip(),
                       linker=(request.args.get("linker") or "").strip(), safety=ctx.safety)
    if request.args.get("calibrated", "").lower() in ("1", "true", "yes"):
        flt = calibrated(flt)
    return web_queries.QueueQuery(flt, item=item, max_score=_number("max_score")), after, limit


def calibrated(flt: ReviewFilter) -> ReviewFilter:
    """Narrow ``flt`` to the calibrated linker and threshold, as ``review --calibrated`` does."""
    path = web().settings.linker.calibrated
    if not path:
        raise BadRequest("calibrated=1 needs thresholds: the operator sets linker.calibrated")
    from wikivel_bot.liveeval.apply import review_threshold
    from wikivel_bot.liveeval.thresholds import load_thresholds

    linker, threshold, _ = review_threshold(load_thresholds(path), flt.linker or None)
    floor = flt.min_score if flt.min_score is not None else threshold
    return replace(flt, linker=linker, min_score=max(threshold, floor))


@bp.errorhandler(BadRequest)
def _bad_request(exc: BadRequest) -> Response:
    return _json({"error": str(exc)}, 400)


@bp.errorhandler(WikivelError)
def _wikivel_error(exc: WikivelError) -> Response:
    return _json({"error": " ".join(str(exc).split())}, 503 if exc.exit_code == 3 else 400)


@bp.get("/queue")
def queue() -> Response:
    query, after, limit = parse_query()
    files, following = web_queries.queue_page(web().store, query, after_id=after, limit=limit)
    return _json({"files": views(files), "next": following})


def one_file(mid: str) -> Optional[ReviewFile]:
    try:
        page_id = page_id_of(mid)
    except ValueError:
        raise BadRequest(f"not an M-id: {mid!r} (expected M followed by digits)") from None
    return web_queries.file_detail(web().store, page_id, web().safety)


@bp.get("/files/<mid>")
def file_detail(mid: str) -> Response:
    found = one_file(mid)
    if found is None:
        return _json({"error": f"{mid} is not in the queue"}, 404)
    return _json(views([found])[0])


@bp.get("/stats")
def stats() -> Response:
    ctx = web()
    store = ctx.store
    reviewer = current_reviewer()
    today = datetime.utcnow().replace(hour=0, minute=0, second=0, microsecond=0)
    body: Dict[str, Any] = {
        "queue": store.counts(),
        "decisions": web_queries.tally(store),
        "decisions_today": web_queries.tally(store, since=today),
    }
    if reviewer is not None:
        body["you"] = {"name": reviewer.name, "decisions": web_queries.tally(store, reviewer.name),
                       "decisions_today": web_queries.tally(store, reviewer.name, since=today),
                       "may_decide": reviewer.may_decide(ctx.settings.web)}
    return _json(body)


@bp.post("/decisions")
def decisions() -> Response:
    ctx = web()
    payload: Any = request.get_json(silent=True)
    outcome = apply_decision(ctx.store, ctx.settings.web, ctx.limiter, current_reviewer(), payload)
    answer = _json(outcome.body, outcome.status)
    if outcome.status == 429:
        answer.headers["Retry-After"] = str(outcome.body.get("retry_after", 60))
    return answer


