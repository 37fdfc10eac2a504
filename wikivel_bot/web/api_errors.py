"""Every answer under ``/api/`` is JSON, errors included.

A gadget or script calling the API reads ``{"error": "…"}`` with the right status, never
Flask's HTML pages: for an unknown path (404), a wrong method (405), a body over
``MAX_CONTENT_LENGTH`` (413), and a server error (500, which Flask logs with its
traceback as before: that one is our bug). A JSON body nested too deeply for Python's
parser is the client's mistake: 400, parsed once here before any handler, so no
``RecursionError`` reaches the log. Pages outside ``/api/`` keep their HTML errors.
"""

from __future__ import annotations

from typing import Any, Optional

from flask import Flask, Response, request

from wikivel_bot.web.security import STATE_CHANGING, is_api, refuse

# The HTTP errors Flask (werkzeug) raises by itself; each gets the JSON answer under /api/.
HTTP_ERRORS = (400, 404, 405, 406, 408, 411, 413, 414, 415, 416, 431, 500, 501)


def http_error(exc: Any) -> Any:
    """404, 405, 413 and the rest (werkzeug's HTTP exceptions): JSON under ``/api/``,
    Flask's own answer elsewhere."""
    if not is_api() or not isinstance(getattr(exc, "code", None), int):
        return exc
    answer = refuse(exc.code, " ".join(str(exc.description or exc.name).split()))
    if exc.code == 405 and exc.response is None:
        allowed = getattr(exc, "valid_methods", None)
        if allowed:
            answer.headers["Allow"] = ", ".join(allowed)
    return answer


def parse_body() -> Optional[Response]:
    """The ``before_request`` hook parsing a JSON body up front (Flask caches the result for
    the handler); a body too deep to parse is a 400."""
    if not is_api() or request.method not in STATE_CHANGING or not request.is_json:
        return None
    try:
        request.get_json(silent=True)
    except RecursionError:
        return refuse(400, "the JSON body is nested too deeply")
    return None


def install(app: Flask) -> None:
    """Register the JSON error handlers and the body check (after the CSRF check, so an
    anonymous or forged request is refused without its body being read)."""
    for code in HTTP_ERRORS:
        app.register_error_handler(code, http_error)
    app.before_request(parse_body)
