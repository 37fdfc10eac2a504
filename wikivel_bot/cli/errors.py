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


# The top-level module a command imports -> the extra of setup.cfg that installs it. A missing
# one is an installation without that extra (a Toolforge image, a `make install` venv), not a
# bug: say which extra in one line. tests/test_declared_dependencies.py keeps this in step.
EXTRA_OF_MODULE = {
    "torch": "ml", "torchvision": "ml", "open_clip": "ml", "timm": "ml", "huggingface_hub": "ml",
    "ray": "backfill",
    "flask": "web", "authlib": "web", "waitress": "web",
    "matplotlib": "report",
    "psycopg": "postgres", "pymysql": "mysql",
    "simdjson": "dumps", "indexed_bzip2": "dumps", "rapidgzip": "dumps",
}


def translate(exc: BaseException, obj: Any = None) -> Optional[WikivelError]:
    """A WikivelError describing ``exc`` in one line, or None to let it through.

    :param exc: what reached the command group.
    :param obj: the :class:`~wikivel_bot.cli.context.CliContext`, for the database's name.
    """
    if isinstance(exc, ModuleNotFoundError) and (exc.name or "").split(".")[0] in EXTRA_OF_MODULE:
        module = (exc.name or "").split(".")[0]
        extra = EXTRA_OF_MODULE[module]
        return WikivelError(f"this command needs the '{extra}' extra, and {module} is not installed: "
                            f"pip install 'wikivel-bot[{extra}]'")
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
