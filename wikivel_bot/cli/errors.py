"""The CLI edge for errors that are not WikivelError: one line, never a traceback.

Library code raises WikivelError subclasses, which the group prints as they are. A few
other errors can still reach the edge from below the library (the database driver, the
operating system); they are described here in one line naming what failed. Anything else
is a bug and keeps its traceback, so it can be reported.
"""

from __future__ import annotations

import sys
from typing import Any, Optional

from wikivel_bot.errors import WikivelError


def translate(exc: BaseException, obj: Any = None) -> Optional[WikivelError]:
    """A WikivelError describing ``exc`` in one line, or None to let it through.

    :param exc: what reached the command group.
    :param obj: the :class:`~wikivel_bot.cli.context.CliContext`, for the database's name.
    """
    if type(exc).__module__.startswith("sqlalchemy") and "sqlalchemy" in sys.modules:
        from wikivel_bot.queue.db_errors import describe

        return describe(exc, _database(obj))
    if isinstance(exc, OSError) and (exc.filename or exc.strerror):
        where = f": {exc.filename}" if exc.filename else ""
        error = WikivelError(f"{exc.strerror or exc}{where}")
        return error
    return None


def _database(obj: Any) -> str:
    store = getattr(obj, "_store", None)
    if store is None:
        return ""
    from wikivel_bot.queue.engine import redacted_url

    return str(redacted_url(store.engine))
