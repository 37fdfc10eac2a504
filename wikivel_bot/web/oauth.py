"""Login with the reviewer's wiki account: MediaWiki OAuth 2.0 (authorization-code grant).

``/login`` sends the browser to ``{oauth_base}/oauth2/authorize`` with a fresh ``state``;
the wiki sends it back to ``/oauth/callback`` with a code, which is exchanged for an access
token (Authlib's requests client) and used once to read ``oauth2/resource/profile``: user
name, groups, blocked flag. Only those land in the (signed) session; the token is dropped,
since the app never acts on the wiki as the reviewer (the bot account writes, naming them).
"""

from __future__ import annotations

import secrets
from typing import Any, Dict
from urllib.parse import urlsplit

from authlib.integrations.requests_client import OAuth2Session
from flask import Blueprint, Response, redirect, render_template, request, session, url_for

from wikivel_bot.web.context import web
from wikivel_bot.web.reviewer import from_profile

bp = Blueprint("oauth", __name__)


def safe_next(target: str) -> str:
    """A local path to go back to after login; anything else (another host) becomes "/"."""
    parts = urlsplit(target or "/")
    if parts.scheme or parts.netloc or not (parts.path or "/").startswith("/") or target.startswith("//"):
        return "/"
    return target or "/"


def _callback_url() -> str:
    public = web().settings.web.public_url.rstrip("/")
    if public:
        return public + url_for("oauth.callback")
    return url_for("oauth.callback", _external=True)


def _client(**kwargs: Any) -> OAuth2Session:
    ctx = web()
    client = OAuth2Session(ctx.settings.web.oauth_client_id, ctx.secrets.oauth_client_secret,
                           redirect_uri=_callback_url(), token_endpoint_auth_method="client_secret_post",
                           **kwargs)
    client.headers["User-Agent"] = ctx.user_agent
    return client


def _error(message: str, status: int = 400) -> Response:
    return Response(render_template("error.html", status=status, message=message), status=status)


@bp.get("/login")
def login() -> Response:
    ctx = web()
    if not ctx.settings.web.oauth_client_id or not ctx.secrets.oauth_client_secret:
        return _error("login is not set up: the operator must set web.oauth_client_id and the "
                      "oauth_client_secret in web.secrets_file", 503)
    state = secrets.token_urlsafe(24)
    session["oauth_state"] = state
    session["after_login"] = safe_next(request.args.get("next", "/"))
    uri, _ = _client().create_authorization_url(ctx.oauth_base + "/oauth2/authorize", state=state)
    return redirect(uri)  # type: ignore[return-value]


@bp.get("/oauth/callback")
def callback() -> Response:
    ctx = web()
    expected = session.pop("oauth_state", None)
    if request.args.get("error"):
        return _error(f"the wiki did not log you in: {request.args.get('error')}", 403)
    if not expected or not secrets.compare_digest(str(expected), request.args.get("state", "")):
        return _error("this login link is stale or was not started here: log in again", 400)
    code = request.args.get("code", "")
    if not code:
        return _error("the wiki sent no authorization code", 400)
    client = _client(state=expected)
    try:
        client.fetch_token(ctx.oauth_base + "/oauth2/access_token", grant_type="authorization_code",
                           code=code, timeout=15)
        answer = client.get(ctx.oauth_base + "/oauth2/resource/profile", timeout=15)
        answer.raise_for_status()
        profile: Dict[str, Any] = answer.json()
        reviewer = from_profile(profile)
    except Exception as exc:  # noqa: BLE001 - any failure of the exchange is one message
        # The exception text may quote the request (with the code): name only its kind.
        return _error(f"logging in with the wiki failed ({type(exc).__name__})", 502)
    after = session.pop("after_login", "/")
    session.clear()  # a fresh session (and CSRF token) for the new user: no fixation
    session["user"] = reviewer.to_session()
    session.permanent = True
    return redirect(safe_next(after))  # type: ignore[return-value]


@bp.post("/logout")
def logout() -> Response:
    session.clear()
    return redirect(url_for("pages.index"))  # type: ignore[return-value]
