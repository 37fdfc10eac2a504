"""Web security in one place: the CSRF check, the security headers, the decision rate limit.

* Every state-changing request (POST, PUT, PATCH, DELETE) passes one ``before_request``
  check: an API call without a login gets 401 first (so a client learns to log in), then a
  missing or wrong CSRF token gets 403. The token lives in the signed session and reaches
  the page in a ``<meta>`` tag; scripts send it as ``X-CSRF-Token``, forms as
  ``csrf_token``.
* A request with ``Authorization: Bearer …`` (the user script on the wiki's pages, where
  this tool's cookie does not go) is judged by its token and its own rule instead
  (:func:`check_token`): only the API, only from the wiki's own origins, JSON bodies.
* CORS (:func:`cors`): only the wiki's own origins (``web.suggest_origins``) get an
  ``Access-Control-Allow-Origin``, and only on :data:`CORS_PATHS`; never with credentials.
* Every answer gets the same headers in one ``after_request``: a Content-Security-Policy
  without inline scripts or styles, ``X-Frame-Options: DENY``, ``nosniff``, a same-origin
  referrer policy, and ``no-store`` on API answers (they name reviewers) unless a handler
  set its own rule (``g.cache_control``: a fresh suggestion names nobody).
* The session cookie is HttpOnly and SameSite=Lax always, and Secure when the public URL
  is https (set in :func:`wikivel_bot.web.app.create_app`).
"""

from __future__ import annotations

import secrets
import threading
import time
from collections import deque
from typing import Callable, Deque, Dict, Iterable, Optional
from urllib.parse import urlsplit

from flask import Flask, Response, g, jsonify, render_template, request, session

STATE_CHANGING = frozenset({"POST", "PUT", "PATCH", "DELETE"})
CSRF_HEADER = "X-CSRF-Token"
CSRF_FIELD = "csrf_token"


def csrf_token() -> str:
    """This session's CSRF token (made on first use)."""
    token = session.get("csrf")
    if not token:
        token = secrets.token_urlsafe(32)
        session["csrf"] = token
    return str(token)


def is_api() -> bool:
    """Whether this request is for the JSON API (answered in JSON, errors included)."""
    return request.path == "/api" or request.path.startswith("/api/")


def refuse(status: int, message: str) -> Response:
    """A JSON error under ``/api/``, else the error page."""
    if is_api():
        answer = jsonify(error=message)
        answer.status_code = status
        return answer
    return Response(render_template("error.html", status=status, message=message), status=status)


def check_request(token_origins: Iterable[str] = ()) -> Optional[Response]:
    """The ``before_request`` hook: None lets the request through.

    :param token_origins: the pages a token may come from (:func:`check_token`)."""
    if g.get("via_token"):
        return check_token(frozenset(token_origins))
    if request.method not in STATE_CHANGING:
        return None
    # g.reviewer: set by wikivel_bot.web.sessions.load, registered before this hook.
    if is_api() and g.get("reviewer") is None:
        return refuse(401, "log in first (GET /login)")
    sent = request.headers.get(CSRF_HEADER) or request.form.get(CSRF_FIELD) or ""
    expected = session.get("csrf") or ""
    if not expected or not secrets.compare_digest(str(sent), str(expected)):
        return refuse(403, "missing or wrong CSRF token (send the page's token as X-CSRF-Token)")
    return None


def check_token(origins: frozenset) -> Optional[Response]:
    """The header path's own rule, instead of the CSRF token: a request carrying
    ``Authorization: Bearer …`` (the user script on the wiki's pages).

    No browser adds that header by itself, so another site cannot make a reviewer's browser
    send it (what the CSRF token guards against on the cookie path). And a token is taken
    only from the wiki's own pages: a state change must name one of ``origins`` in its
    ``Origin`` header (browsers always send it there), any request that names another origin
    is refused, and a decision's body must be JSON (a cross-origin JSON POST needs a CORS
    preflight, which no other origin passes). Only ``/api/`` answers to a token.
    """
    origin = request.headers.get("Origin", "")
    if not is_api():
        return refuse(400, "a token is accepted only by the JSON API (/api/)")
    if origin and origin not in origins or request.method in STATE_CHANGING and origin not in origins:
        return refuse(403, f"a token is accepted only from the wiki's own pages, not from {origin or 'no origin'}")
    if g.get("reviewer") is None:
        return refuse(401, "the token is unknown, ended or expired: log in to the tool again")
    if request.method in STATE_CHANGING and request.content_length and not request.is_json:
        return refuse(415, "send the decision as JSON (Content-Type: application/json)")
    return None


def content_security_policy(image_origins: Iterable[str]) -> str:
    """The CSP: scripts, styles and requests only from this app; images also from the wikis."""
    images = " ".join(["'self'", "data:", *sorted(set(image_origins))])
    return (
        "default-src 'none'; script-src 'self'; style-src 'self'; "
        f"img-src {images}; connect-src 'self'; font-src 'self'; form-action 'self'; "
        "frame-ancestors 'none'; base-uri 'none'"
    )


def origin_of(url: str) -> str:
    """``scheme://host[:port]`` of a URL, or "" for an empty one."""
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}" if parts.scheme and parts.netloc else ""


def add_headers(csp: str) -> Callable[[Response], Response]:
    """The ``after_request`` hook setting the security headers on every answer."""

    def hook(response: Response) -> Response:
        response.headers["Content-Security-Policy"] = csp
        response.headers["X-Frame-Options"] = "DENY"
        response.headers["X-Content-Type-Options"] = "nosniff"
        response.headers["Referrer-Policy"] = "same-origin"
        if request.path.startswith("/api/"):
            # no-store unless the handler set a rule of its own (a fresh suggestion names no
            # reviewer: GET /api/suggest, wikivel_bot.web.suggest).
            response.headers["Cache-Control"] = g.get("cache_control") or "no-store"
        return response

    return hook


# What a page of the wiki's own origins may call from the browser (the user script):
# suggestions, and with a token (wikivel_bot.web.tokens) decisions and who is logged in.
CORS_PATHS = ("/api/suggest", "/api/decisions", "/api/me")
CORS_HEADERS = "Authorization, Content-Type"


def cors(origins: Iterable[str]) -> Callable[[Response], Response]:
    """The ``after_request`` hook of CORS: an answer to a page of one of ``origins`` (the
    wiki's own, ``web.suggest_origins``) names that origin in ``Access-Control-Allow-Origin``;
    no other origin ever gets one, so the browser keeps every other page from reading
    answers (and from sending a decision's JSON body at all: that needs a preflight).
    Credentials are never allowed: a page of the wiki sends the reviewer's token as an
    ``Authorization`` header, never this tool's cookie."""
    allowed = frozenset(o.rstrip("/") for o in origins if o)

    def hook(response: Response) -> Response:
        if not request.path.startswith(CORS_PATHS):
            return response
        response.vary.add("Origin")
        origin = request.headers.get("Origin", "")
        if origin in allowed:
            response.headers["Access-Control-Allow-Origin"] = origin
            if request.method == "OPTIONS":
                response.headers["Access-Control-Allow-Methods"] = "GET, POST"
                response.headers["Access-Control-Allow-Headers"] = CORS_HEADERS
                response.headers["Access-Control-Max-Age"] = "600"
            response.headers["Access-Control-Expose-Headers"] = "Retry-After"
        return response

    return hook


def install(app: Flask, image_origins: Iterable[str], cors_origins: Iterable[str] = ()) -> None:
    """Register the hooks and the ``csrf_token()`` template function on ``app``.

    :param cors_origins: the pages allowed to call :data:`CORS_PATHS` from a browser."""
    allowed = frozenset(o.rstrip("/") for o in cors_origins if o)
    app.before_request(lambda: check_request(allowed))
    app.after_request(add_headers(content_security_policy(image_origins)))
    app.after_request(cors(cors_origins))
    app.jinja_env.globals["csrf_token"] = csrf_token


class RateLimiter:
    """At most ``per_minute`` events per key in any 60-second window (a sliding log).

    Per process: behind several web workers each keeps its own count, so the effective
    limit is per worker (docs/deploy.md says so). The clock is injectable for tests.
    """

    def __init__(self, per_minute: int, clock: Callable[[], float] = time.monotonic) -> None:
        self.per_minute = per_minute
        self._clock = clock
        self._lock = threading.Lock()
        self._events: Dict[str, Deque[float]] = {}

    def allow(self, key: str) -> float:
        """Count one event for ``key``; 0.0 when allowed, else seconds until one would be."""
        now = self._clock()
        with self._lock:
            log = self._events.setdefault(key, deque())
            while log and log[0] <= now - 60.0:
                log.popleft()
            if len(log) >= self.per_minute:
                return max(0.001, log[0] + 60.0 - now)
            log.append(now)
            return 0.0
