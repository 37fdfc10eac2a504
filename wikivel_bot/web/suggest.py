"""``GET /api/suggest?file=<File: title, M-id or Commons URL>``: suggestions for any file.

Answered by the resident suggestion service (``wikivel_bot.resident``; built by the CLI and
passed to ``create_app`` as ``suggester``):

* a file the running linker has not queued: ``suggest --json``'s document for that one file
  (``linker``, ``label_set``, ``index``, ``files: [entry]``, ``safety``) and ``"source":
  "linker"``, ``"mid"``, ``"items"`` (label, description and image of each suggested item in
  the reviewer's language, ``uselang``). Withheld items are counted by rule, never named.
  These answers name no reviewer: ``Cache-Control: public, max-age=web.suggest_max_age_s``
  (the service's own cache is per file revision and linker version);
* a file the running linker queued: ``"source": "queue"`` and the file as ``/api/files/<M-id>``
  shows it, with each pair's review state (``no-store``, like every answer naming reviewers);
* a file that cannot be read: ``{"error": "…", "file": "…"}`` (400 a source that names no
  file, 404 no such or unusable file, 502 the wiki did not answer);
* ``POST /api/suggest/queue`` ``{"file": "M123"}``: a reviewer who may decide puts the file's
  current suggestions into the queue (as the daemon would), to decide on them at once;
* 429 with ``Retry-After`` over ``web.suggest_per_minute`` for one client (a login, else its
  IP address); 503 with ``Retry-After`` when ``web.suggest_queue`` requests already wait;
  503 without it when the operator has not turned suggestions on (``web.suggest``).
"""

from __future__ import annotations

from typing import Any, Dict

from flask import Blueprint, Response, g, jsonify, request

from wikivel_bot.errors import WikivelError
from wikivel_bot.queue import web_queries
from wikivel_bot.types import mid_of
from wikivel_bot.web.api import uselang, views
from wikivel_bot.web.context import current_reviewer, web
from wikivel_bot.web.items import items_in

bp = Blueprint("suggest", __name__, url_prefix="/api")
# Longer is no title, M-id or Commons URL (titles are at most 255 bytes).
MAX_SOURCE = 1024


def _json(body: Dict[str, Any], status: int = 200, retry_after: int = 0) -> Response:
    answer = jsonify(body)
    answer.status_code = status
    if retry_after:
        answer.headers["Retry-After"] = str(retry_after)
    return answer


def client_key() -> str:
    """Who the per-client limit counts: the logged-in reviewer, else the address."""
    reviewer = current_reviewer()
    return f"user:{reviewer.name}" if reviewer is not None else f"ip:{request.remote_addr or '-'}"


@bp.get("/suggest")
def suggest() -> Response:
    ctx = web()
    source = (request.args.get("file") or "").strip()
    if ctx.suggester is None or ctx.suggest_limiter is None:
        return _json({"error": "suggestions are off on this tool (the operator sets web.suggest)"}, 503)
    if not source or len(source) > MAX_SOURCE:
        return _json({"error": "give file=File:Name.jpg, an M-id such as M123, or a Commons URL", "file": source[:80]},
                     400)
    wait = ctx.suggest_limiter.allow(client_key())
    if wait:
        per = ctx.settings.web.suggest_per_minute
        return _json({"error": f"more than {per} suggestions a minute from one client: wait {wait:.0f} s"}, 429,
                     int(wait) + 1)
    try:
        answer = ctx.suggester.suggest(source)
    except Exception as exc:  # noqa: BLE001 - the service's Busy (the web does not import it)
        retry = getattr(exc, "retry_after", None)
        if retry is None:
            raise
        return _json({"error": str(exc)}, 503, int(retry))
    entry = answer.entry
    if answer.status != 200:
        return _json({"error": " ".join(str(entry.get("reason") or "cannot read the file").split()),
                      "file": source[:MAX_SOURCE]}, answer.status)
    if answer.queued:
        found = web_queries.file_detail(ctx.store, answer.page_id, ctx.safety)
        if found is not None:
            return _json({"source": "queue", "linker_version": answer.version, "file": views([found])[0]})
    body = dict(answer.doc)
    qids = [c["qid"] for c in entry.get("candidates", ())]
    shown = items_in(set(qids), uselang(), ctx.labels, ctx.items)
    body.update(source="linker", mid=mid_of(answer.page_id), cached=answer.cached,
                items={q: _item(shown.get(q)) for q in qids})
    g.cache_control = f"public, max-age={ctx.settings.web.suggest_max_age_s}"
    response = _json(body)
    response.vary.add("Accept-Language")
    return response


@bp.post("/suggest/queue")
def queue_file() -> Response:
    """``{"file": "M123"}``: queue the file's current suggestions, so they can be decided
    (a reviewer on a file page the bot had not reached). Needs a login that may decide; the
    decisions' rate limit counts it. Answers as ``GET /api/suggest`` does for a queued file."""
    ctx = web()
    reviewer = current_reviewer()
    if ctx.suggester is None:
        return _json({"error": "suggestions are off on this tool (the operator sets web.suggest)"}, 503)
    if reviewer is None:
        return _json({"error": "log in first"}, 401)
    if not reviewer.may_decide(ctx.settings.web):
        return _json({"error": reviewer.why_not(ctx.settings.web)}, 403)
    payload: Any = request.get_json(silent=True)
    source = str(payload.get("file") or "").strip() if isinstance(payload, dict) else ""
    if not source or len(source) > MAX_SOURCE:
        return _json({"error": 'send {"file": "M123"}'}, 400)
    wait = ctx.limiter.allow(reviewer.name)
    if wait:
        return _json({"error": f"too many requests: wait {wait:.0f} s"}, 429, int(wait) + 1)
    try:
        answer = ctx.suggester.queue_file(source)
    except WikivelError as exc:  # the daemon holds the file now
        return _json({"error": " ".join(str(exc).split())}, 409)
    except Exception as exc:  # noqa: BLE001 - the service's Busy (the web does not import it)
        retry = getattr(exc, "retry_after", None)
        if retry is None:
            raise
        return _json({"error": str(exc)}, 503, int(retry))
    if answer.status != 200:
        return _json({"error": " ".join(str(answer.entry.get("reason") or "cannot read the file").split()),
                      "file": source[:MAX_SOURCE]}, answer.status)
    found = web_queries.file_detail(ctx.store, answer.page_id, ctx.safety)
    if found is None:  # pragma: no cover - queued just now
        return _json({"error": f"{source} is not in the queue"}, 409)
    return _json({"source": "queue", "linker_version": answer.version, "file": views([found])[0]})


def _item(info: Any) -> Dict[str, str]:
    """An item's texts and image as the page shows them ({} when nothing is known)."""
    if info is None:
        return {}
    return {"label": info.label, "description": info.description, "lang": info.lang,
            "description_lang": info.description_lang, "image": info.image_title, "thumb": info.image_thumb}
