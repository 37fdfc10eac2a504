"""Database errors that escape the store, described in one line for the CLI edge.

The store translates the errors it expects (cannot connect, schema outdated). Others can
still come from the driver in the middle of a command: a read-only SQLite file refuses the
first write, a disk fills up, a value does not fit a column. The CLI asks :func:`describe`
for one clear line instead of showing SQLAlchemy's traceback with the SQL and parameters.
The daemon asks :func:`unreachable` whether an error is an outage to wait out.
"""

from __future__ import annotations

from typing import Optional

from sqlalchemy.exc import DBAPIError, InterfaceError, OperationalError, SQLAlchemyError

from wikivel_bot.errors import DatabaseUnavailable, StoreError

# Driver messages that mean "you cannot write here", and the advice that goes with them.
_READ_ONLY = ("readonly database", "read-only", "read only")


def describe(exc: BaseException, where: str = "") -> Optional[StoreError]:
    """A StoreError for a SQLAlchemy error, or None when ``exc`` is not one.

    :param exc: any exception that reached the CLI.
    :param where: the database, as shown to users (password hidden).
    """
    if not isinstance(exc, SQLAlchemyError):
        return None
    detail = str(exc.orig) if isinstance(exc, DBAPIError) and exc.orig is not None else str(exc).split("\n")[0]
    at = f" {where}" if where else ""
    if any(marker in detail.lower() for marker in _READ_ONLY):
        return DatabaseUnavailable(
            f"the queue database{at} is read-only ({detail}): check the file's permissions and "
            "its folder's, or use a database this user may write"
        )
    return DatabaseUnavailable(f"the queue database{at} failed: {type(exc.orig if isinstance(exc, DBAPIError) else exc).__name__}: {detail}")


def unreachable(exc: BaseException) -> bool:
    """Whether ``exc`` means the database cannot be reached right now (down, restarting, the
    connection cut): a condition to wait out and retry, not a bug to show a traceback for.

    The store turns a failed connect into DatabaseUnavailable; a connection lost in the
    middle of a statement reaches callers as the driver's OperationalError/InterfaceError
    (SQLAlchemy marks it ``connection_invalidated`` when the dialect knows the message).
    """
    if isinstance(exc, DatabaseUnavailable):
        return True
    if not isinstance(exc, DBAPIError):
        return False
    if any(marker in str(exc.orig).lower() for marker in _READ_ONLY):
        return False  # reachable but refusing writes: waiting does not help
    return bool(exc.connection_invalidated) or isinstance(exc, (OperationalError, InterfaceError))
