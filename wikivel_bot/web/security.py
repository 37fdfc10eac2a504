"""Web security in one place: the CSRF check, the security headers, the decision rate limit.

* Every state-changing request (POST, PUT, PATCH, DELETE) passes one ``before_request``
  check: an API call without a login gets 401 first (so a client learns to log in), then a
  missing or wrong CSRF token gets 403. The token lives in the signed session and reaches
  the page in a ``<meta>`` tag; scripts send it as ``X-CSRF-Token``, forms as
  ``csrf_token``.
* Every answer gets the same headers in one ``after_request``: a Content-Security-Policy
  without inline scripts or styles, ``X-Frame-Options: DENY``, ``nosniff``, a same-origin
  referrer policy, and ``no-store`` on API answers (they name reviewers).
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


def check_request() -> Optional[Response]:
    """The ``before_request`` hook: None lets the request through."""
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
            response.headers["Cache-Control"] = "no-store"
        return response

    return hook


def install(app: Flask, image_origins: Iterable[str]) -> None:
    """Register the hooks and the ``csrf_token()`` template function on ``app``."""
    app.before_request(check_request)
    app.after_request(add_headers(content_security_policy(image_origins)))
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
