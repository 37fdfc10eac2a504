"""The web app for a WSGI server other than the built-in one (gunicorn on Toolforge).

``gunicorn 'wikivel_bot.cli.wsgi:create()'`` builds the app from the same settings as the
CLI (``$WIKIVEL_CONFIG`` or ./wikivel.toml, then ``WIKIVEL_*`` variables). It lives in
``cli/`` because this package (with ``daemon/scheduler.py``) is the only one that builds Settings and
the database engine.
"""

from __future__ import annotations

from typing import Any

from wikivel_bot.cli.context import CliContext
from wikivel_bot.cli.web import _labels, _reverter


def create() -> Any:
    """The Flask app (a WSGI callable) on the configured queue."""
    from wikivel_bot.web.app import create_app

    obj = CliContext()
    # A connection per server thread (gunicorn's --threads is web.threads in docs/deploy.md).
    store = obj.store(pool_size=obj.settings.web.threads)
    from wikivel_bot.cli.resident import build_suggester

    return create_app(obj.settings, store, reverter=_reverter(obj), labels=_labels(obj),
                      suggester=build_suggester(obj, store))
