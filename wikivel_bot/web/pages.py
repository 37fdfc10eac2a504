"""The HTML pages: start page, review (one file at a time), grid (one item, many files),
write batches (with revert for operators), and ``/healthz``.

Pages are rendered on the server (Jinja2, autoescaped) and made interactive by scripts
from ``static/`` (no inline script: the CSP forbids it). Every decision a page makes goes
through ``POST /api/decisions``, the one decision function.
"""

from __future__ import annotations

from typing import Any, Dict
from urllib.parse import urlencode

from flask import Blueprint, Response, current_app, redirect, render_template, request, session, url_for

from wikivel_bot.core.review_rules import ReviewFilter
from wikivel_bot.errors import WikivelError
from wikivel_bot.queue import reviews, revert_queries, web_queries
from wikivel_bot.web.api import BadRequest, one_file, parse_query, uselang, views
from wikivel_bot.web.context import current_reviewer, web
from wikivel_bot.web.items import items_in

bp = Blueprint("pages", __name__)
FILTER_KEYS = ("category", "linker", "min_score", "max_score", "calibrated", "uselang")


def _filters() -> Dict[str, str]:
    """The filter parameters of this request, to carry over to the next page."""
    return {k: request.args[k] for k in FILTER_KEYS if request.args.get(k)}


def _page(template: str, status: int = 200, **values: Any) -> Response:
    ctx = web()
    reviewer = current_reviewer()
    values.setdefault("title", "")
    body = render_template(
        template, reviewer=reviewer, may_decide=bool(reviewer and reviewer.may_decide(ctx.settings.web)),
        why_not=reviewer.why_not(ctx.settings.web) if reviewer else "",
        is_operator=bool(reviewer and reviewer.is_operator(ctx.settings.web)), lang=uselang(),
        login_url=url_for("oauth.login", next=request.full_path.rstrip("?")), **values)
    return Response(body, status=status)


def _error(status: int, message: str) -> Response:
    return _page("error.html", status=status, status_code=status, message=message)


@bp.errorhandler(BadRequest)
def _bad_request(exc: BadRequest) -> Response:
    return _error(400, str(exc))


@bp.get("/healthz")
def healthz() -> Response:
    try:
        web_queries.ping(web().store)
    except WikivelError as exc:
        return Response(f"queue unreachable: {type(exc).__name__}\n", status=503, mimetype="text/plain")
    return Response("ok\n", mimetype="text/plain")


@bp.get("/favicon.ico")
def favicon() -> Response:
    # Browsers ask for it on every site; an empty answer keeps their consoles clean.
    return Response(status=204)


@bp.get("/")
def index() -> Response:
    ctx = web()
    reviewer = current_reviewer()
    counts = ctx.store.counts()
    mine = web_queries.tally(ctx.store, reviewer.name) if reviewer else None
    return _page("index.html", counts=counts, everyone=web_queries.tally(ctx.store), mine=mine)


@bp.get("/review")
def review() -> Response:
    query, after, _ = parse_query()
    store = web().store
    flt: ReviewFilter = query.flt
    mid = (request.args.get("file") or "").strip()
    if mid:
        found = one_file(mid)
        if found is None:
            return _error(404, f"{mid} is not in the queue")
    else:
        settings = web().settings
        if settings.review.order == "uncertainty":  # review.order (docs/learning.md)
            from wikivel_bot.queue.learning_queries import next_uncertain_file

            waiting = next_uncertain_file(store, flt, settings.learning.threshold, after_id=after)
        else:
            waiting = reviews.next_review_file(store, flt, after_id=after)
        if waiting is None:
            return _page("review.html", file=None, filters=_filters(), title="Review")
        found = web_queries.file_detail(store, waiting.page_id, web().safety)
        if found is None:
            return _error(404, "that file left the queue meanwhile")
    nxt = web_queries.file_after(store, flt, found.file_id)
    prev = web_queries.file_after(store, flt, found.file_id, backwards=True)
    filters = _filters()
    links = {
        "next": _review_url(filters, file=nxt.mid) if nxt else "",
        "prev": _review_url(filters, file=prev.mid) if prev else "",
        "after": _review_url(filters, after=str(found.file_id)),
    }
    return _page("review.html", file=views([found])[0], links=links, filters=filters,
                 order=web().settings.review.order,
                 refresh_ms=current_app.config.get("WIKIVEL_REFRESH_MS", 15000), title=f"Review {found.mid}")


def _review_url(filters: Dict[str, str], **extra: str) -> str:
    return url_for("pages.review") + "?" + urlencode({**filters, **extra})


@bp.get("/grid")
def grid() -> Response:
    ctx = web()
    query, after, limit = parse_query()
    if not query.item:
        return _page("grid_items.html", items=web_queries.top_items(ctx.store, safety=ctx.safety), title="Grid")
    order = ctx.settings.review.order
    if order == "uncertainty":  # review.order, as /review (docs/learning.md)
        from wikivel_bot.queue.learning_queries import uncertain_queue_page

        files, following = uncertain_queue_page(ctx.store, query, ctx.settings.learning.threshold,
                                                after_id=after, limit=limit)
    else:
        files, following = web_queries.queue_page(ctx.store, query, after_id=after, limit=limit)
    shown = views(files)
    first = shown[0]["candidates"][0] if shown and shown[0]["candidates"] else {}
    label, label_lang = first.get("label", ""), first.get("label_lang", "")
    if not label:
        found = items_in([query.item], uselang(), ctx.labels, ctx.items).get(query.item)
        label, label_lang = (found.label, found.lang) if found else ("", "")
    more = url_for("pages.grid") + "?" + urlencode({**_filters(), "item": query.item, "after": following}) \
        if following else ""
    return _page("grid.html", item=query.item, label=label, label_lang=label_lang, files=shown, more=more,
                 order=order, title=f"Grid {query.item}")


@bp.get("/batches")
def batches() -> Response:
    return _page("batches.html", batches=web_queries.recent_batches(web().store), title="Write batches")


@bp.get("/batches/<batch_id>")
def batch(batch_id: str) -> Response:
    events = reviews.audit_events(web().store, batch_id=batch_id)
    edits = [e for e in events if e.kind == "edit"]
    if not edits:
        return _error(404, f"no write batch {batch_id}")
    site = web().settings.site
    # What the revert just done said (POST/redirect/GET: shown once, a reload shows the batch).
    done = session.pop("reverted", None) if session.get("reverted", {}).get("batch") == batch_id else None
    return _page("batch.html", batch_id=batch_id, edits=edits, index_url=_index_url(site.api_url),
                 reverted=done["lines"] if done else None, title=f"Batch {batch_id}")


def _may_revert(batch_id: str) -> Response | str:
    """The operator's name, or the answer refusing them."""
    ctx = web()
    reviewer = current_reviewer()
    if reviewer is None:
        return redirect(url_for("oauth.login", next=url_for("pages.batch", batch_id=batch_id)))  # type: ignore[return-value]
    if not reviewer.is_operator(ctx.settings.web):
        if reviewer.blocked:
            return _error(403, reviewer.why_not(ctx.settings.web))
        return _error(403, f"{reviewer.name} is not an operator: only web.operators and members of "
                           "web.operator_groups may revert a batch")
    if reviewer.partial is not None and reviewer.partial.file_pages():
        # A revert edits the batch's files: not those a partial block keeps this operator from.
        try:
            statements = revert_queries.written_statements(ctx.store, batch_id)
        except WikivelError:
            statements = []  # no such batch: the revert itself says so
        refused = next((why for why in (reviewer.why_not_file(s.page_id, s.title) for s in statements) if why), "")
        if refused:
            return _error(403, refused)
    if ctx.reverter is None:
        return _error(503, "reverting is not available in this web process")
    return reviewer.name


@bp.get("/batches/<batch_id>/revert")
def confirm_revert(batch_id: str) -> Response:
    """Ask first: how many statements on how many files the revert would remove."""
    who = _may_revert(batch_id)
    if not isinstance(who, str):
        return who
    try:
        statements = revert_queries.written_statements(web().store, batch_id)
    except WikivelError as exc:
        return _error(404, " ".join(str(exc).split()))
    return _page("revert_confirm.html", batch_id=batch_id, statements=len(statements),
                 files=len({s.page_id for s in statements}), title=f"Revert batch {batch_id}?")


@bp.post("/batches/<batch_id>/revert")
def revert(batch_id: str) -> Response:
    who = _may_revert(batch_id)
    if not isinstance(who, str):
        return who
    try:
        lines = web().reverter(batch_id, who)  # type: ignore[misc]
    except WikivelError as exc:
        return _error(409, " ".join(str(exc).split()))
    # Kept in the (cookie) session until the batch page shows it: a few short lines.
    session["reverted"] = {"batch": batch_id, "lines": [line[:300] for line in lines[:20]]}
    return redirect(url_for("pages.batch", batch_id=batch_id), code=303)  # type: ignore[return-value]


def _index_url(api_url: str) -> str:
    return api_url.rsplit("/", 1)[0] + "/index.php" if api_url else "https://commons.wikimedia.org/w/index.php"


