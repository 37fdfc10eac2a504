"""The Commons user script and what it needs from the tool, beside the review page.

* ``GET /gadget.js`` — the user script (``static/gadget.js``, its source in this repository),
  loaded on the wiki with ``mw.loader.load`` (docs/reviewer.md).
* ``GET /gadget/login?origin=<the wiki page's origin>`` — opened by the script in a popup: the
  tool's own OAuth login (a first-party window, so its cookie works even where the browser
  blocks third-party cookies), then a page that hands the script a token with
  ``postMessage`` addressed to that origin alone — one of the wiki's own
  (``web.suggest_origins``); any other is refused before a token is made.
* ``GET /api/me`` — who the token (or cookie) belongs to and whether they may decide.
* ``POST /api/me/logout`` — ends the token's login (the script's "log out"); ``/logout`` on the
  tool ends the cookie's login and every token it handed out.

Decisions go through ``POST /api/decisions`` with ``Authorization: Bearer <token>``: the same
function as the review page (state seen, 409 on a race, blocks, operator override, audit).
"""

from __future__ import annotations

from urllib.parse import urlencode

from flask import Blueprint, Response, current_app, g, jsonify, redirect, render_template, request, url_for

from wikivel_bot.web import sessions
from wikivel_bot.web.context import current_reviewer, web
from wikivel_bot.web.security import refuse

bp = Blueprint("gadget", __name__)


def allowed_origins() -> frozenset:
    """The wiki's own origins (CORS and the token's), as ``create_app`` resolved them."""
    return frozenset(current_app.config.get("WIKIVEL_WIKI_ORIGINS") or ())


@bp.get("/gadget.js")
def script() -> Response:
    answer = current_app.send_static_file("gadget.js")
    answer.headers["Content-Type"] = "text/javascript; charset=utf-8"
    g.cache_control = "public, max-age=300"
    answer.headers["Cache-Control"] = "public, max-age=300"
    return answer


@bp.get("/gadget/login")
def login() -> Response:
    origin = (request.args.get("origin") or "").rstrip("/")
    if origin not in allowed_origins():
        return refuse(400, f"the user script may log in only from the wiki's own pages, not from {origin or 'nowhere'}")
    reviewer = current_reviewer()
    if reviewer is None:
        back = url_for("gadget.login") + "?" + urlencode({"origin": origin})
        return redirect(url_for("oauth.login", next=back))  # type: ignore[return-value]
    token = sessions.start_token(reviewer)
    answer = Response(render_template("gadget_login.html", token=token, origin=origin, name=reviewer.name))
    answer.headers["Cache-Control"] = "no-store"
    return answer


@bp.get("/api/me")
def me() -> Response:
    reviewer = current_reviewer()
    if reviewer is None:
        return refuse(401, "log in first (the user script opens the tool's login)")
    settings = web().settings.web
    return jsonify(name=reviewer.name, may_decide=reviewer.may_decide(settings), why_not=reviewer.why_not(settings),
                   operator=reviewer.is_operator(settings))


@bp.post("/api/me/logout")
def logout() -> Response:
    if not g.get("via_token"):
        return refuse(400, "log out of the tool's own pages with POST /logout")
    sessions.end_token()
    return jsonify(logged_out=True)
