"""Login with the reviewer's wiki account: MediaWiki OAuth 2.0 (authorization-code grant).

``/login`` sends the browser to ``{oauth_base}/oauth2/authorize`` with a fresh ``state``
and a PKCE challenge (S256: a code caught on its way back is useless without the verifier,
kept in this browser's signed session and sent to the wiki only with the exchange); the wiki sends the browser
back to ``/oauth/callback`` with a code, which is exchanged, with the verifier, for an access
token (Authlib's requests client) and used once to read ``oauth2/resource/profile``: user
name, groups, blocked flag. Those open a server-side login (:mod:`wikivel_bot.web.sessions`,
which re-reads the profile every few minutes); the token is dropped, since the app never
acts on the wiki as the reviewer (the bot account writes, naming them).

A callback whose ``state`` is not this browser's leaves the pending login alone: a forged
or stale link cannot spoil the real one still on its way back from the wiki.
"""

from __future__ import annotations

import secrets
from typing import Any, Dict
from urllib.parse import urlsplit

from authlib.integrations.requests_client import OAuth2Session
from flask import Blueprint, Response, redirect, render_template, request, session, url_for

from wikivel_bot.config.loading import OAUTH_SECRET_VARIABLE, SESSION_SECRET_VARIABLE
from wikivel_bot.web import sessions
from wikivel_bot.web.context import web
from wikivel_bot.web.reviewer import from_profile

bp = Blueprint("oauth", __name__)


def safe_next(target: str) -> str:
    """A local path to go back to after login; anything else (another host) becomes "/".

    Browsers read a backslash as a slash and drop tabs and newlines, so ``/\\evil.example``
    or ``/<tab>/evil.example`` would leave the site as ``//evil.example`` does: refused too."""
    if "\\" in target or any(ord(c) < 0x20 or ord(c) == 0x7F for c in target):
        return "/"
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
                           code_challenge_method="S256", **kwargs)
    client.headers["User-Agent"] = ctx.user_agent
    return client


def not_set_up(has_id: bool, has_secret: bool) -> str:
    """What the operator must still set for logins (names where, never a value)."""
    missing = [] if has_id else ["web.oauth_client_id (the OAuth consumer's client id)"]
    if not has_secret:
        missing.append(f"its secret (oauth_client_secret in web.secrets_file, or the environment "
                       f"variable {OAUTH_SECRET_VARIABLE}; with session_secret or "
                       f"{SESSION_SECRET_VARIABLE} too, logins outlive a restart)")
    return "login is not set up: the operator must set " + " and ".join(missing) + " (docs/deploy.md)"


def _error(message: str, status: int = 400) -> Response:
    return Response(render_template("error.html", status=status, message=message), status=status)


@bp.get("/login")
def login() -> Response:
    ctx = web()
    if not ctx.settings.web.oauth_client_id or not ctx.secrets.oauth_client_secret:
        return _error(not_set_up(bool(ctx.settings.web.oauth_client_id), bool(ctx.secrets.oauth_client_secret)), 503)
    state = secrets.token_urlsafe(24)
    verifier = secrets.token_urlsafe(48)  # 64 characters: within PKCE's 43..128
    session["oauth_state"] = state
    session["oauth_verifier"] = verifier
    session["after_login"] = safe_next(request.args.get("next", "/"))
    uri, _ = _client().create_authorization_url(ctx.oauth_base + "/oauth2/authorize", state=state,
                                                code_verifier=verifier)
    return redirect(uri)  # type: ignore[return-value]


@bp.get("/oauth/callback")
def callback() -> Response:
    ctx = web()
    expected = session.get("oauth_state")
    if not expected or not secrets.compare_digest(str(expected), request.args.get("state", "")):
        # Not this browser's login: keep the pending one (its state and verifier) intact.
        return _error("this login link is stale or was not started here: log in again", 400)
    session.pop("oauth_state", None)
    verifier = str(session.pop("oauth_verifier", ""))
    if request.args.get("error"):
        return _error(f"the wiki did not log you in: {request.args.get('error')}", 403)
    code = request.args.get("code", "")
    if not code:
        return _error("the wiki sent no authorization code", 400)
    client = _client(state=expected)
    try:
        client.fetch_token(ctx.oauth_base + "/oauth2/access_token", grant_type="authorization_code",
                           code=code, code_verifier=verifier, timeout=15)
        answer = client.get(ctx.oauth_base + "/oauth2/resource/profile", timeout=15)
        answer.raise_for_status()
        profile: Dict[str, Any] = answer.json()
        reviewer = from_profile(profile)
    except Exception as exc:  # noqa: BLE001 - any failure of the exchange is one message
        # The exception text may quote the request (with the code): name only its kind.
        return _error(f"logging in with the wiki failed ({type(exc).__name__})", 502)
    after = session.pop("after_login", "/")
    sessions.end()  # a fresh session (and CSRF token) for the new user: no fixation
    sessions.start(reviewer)
    return redirect(safe_next(after))  # type: ignore[return-value]


@bp.post("/logout")
def logout() -> Response:
    sessions.end()  # the server forgets the login: a saved copy of the cookie opens nothing
    return redirect(url_for("pages.index"))  # type: ignore[return-value]
