"""Ray's own output during a backfill: off the terminal unless asked for (``-v``).

A backfill prints its own summary and, when a stage fails, one line (``pipeline``). Ray
adds its own lines to the terminal: its C++ core's error-level lines (``core_worker.cc`` on
actors whose constructor arguments sit in the object store, one per linker actor), the
line its logger prints when its level is set, Ray Data's execution plan and progress notes,
Python warnings about its operators, and the workers' forwarded output. None of them is a
failure of the run (a failure arrives in the driver as an exception); all of them still go
to Ray's log files (``/tmp/ray/session_*/logs``). These helpers keep them off the terminal:

* ``RAY_BACKEND_LOG_LEVEL=fatal`` (unless the operator set it) before ``ray.init``, which
  is when Ray reads it for this process (``init_options`` also turns off the workers'
  forwarded output, ``log_to_driver``);
* the terminal's stderr pointed at ``/dev/null`` while ``ray.init`` runs, because setting
  that level makes Ray's logger announce it on stderr, once, as it starts;
* Ray Data's console handler raised to CRITICAL and Ray's Python warnings ignored while the
  dataset runs (its file handler keeps logging).

A stage that fails reaches the user as one line all the same (:func:`stage_failure`).
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import warnings
from typing import Any, Dict, Iterator, List, Tuple

from wikivel_bot.errors import WikivelError

LEVEL_VARIABLE = "RAY_BACKEND_LOG_LEVEL"


def init_options(ray_logs: bool) -> Dict[str, Any]:
    """``ray.init`` keyword arguments for Ray's logging.

    :param ray_logs: show Ray's own lines (``-v``); False keeps them off the terminal.
    """
    return {"logging_level": logging.WARNING if ray_logs else logging.ERROR, "log_to_driver": ray_logs}


@contextlib.contextmanager
def quiet_start(ray_logs: bool) -> Iterator[None]:
    """Around ``ray.init``: its C++ core's level set to fatal and its start-up lines dropped.

    The stderr file descriptor is restored when ``ray.init`` returns or raises (its errors
    arrive as exceptions, which the caller reports in one line).
    """
    if ray_logs:
        yield
        return
    os.environ.setdefault(LEVEL_VARIABLE, "fatal")
    try:
        saved = os.dup(2)
    except OSError:  # no stderr at all: nothing to keep quiet
        yield
        return
    try:
        with open(os.devnull, "wb") as null:
            os.dup2(null.fileno(), 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


@contextlib.contextmanager
def quiet_run(ray_logs: bool) -> Iterator[None]:
    """While the dataset runs: Ray Data's console lines and Ray's Python warnings dropped."""
    if ray_logs:
        yield
        return
    raised: List[Tuple[logging.Handler, int]] = []
    for handler in logging.getLogger("ray.data").handlers:
        if not isinstance(handler, logging.FileHandler) and "File" not in type(handler).__name__:
            raised.append((handler, handler.level))
            handler.setLevel(logging.CRITICAL)
    try:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", module=r"ray(\.|$)")
            yield
    finally:
        for handler, level in raised:
            handler.setLevel(level)


# An exception's own line in a traceback's text: ``package.module.SomeError: message``.
# An exception line of a traceback: a class named like one (…Error, …Exception…), or any of
# ours, whatever its name (``wikivel_bot.errors.WikiUnreachable``, ``FileUnavailable``).
_EXCEPTION_LINE = re.compile(r"^([A-Za-z_][\w.]*(?:Error|Exception|Exit|Interrupt)\w*|wikivel_bot\.[\w.]+): (.+)$")
_ANSI = re.compile(r"\x1b\[[0-9;]*m")


def stage_failure(exc: BaseException, files_read: int) -> WikivelError:
    """One line for a stage that failed on Ray: the stage's own error, not Ray's text.

    Ray hands the driver the stage's exception only as traceback text (``RayTaskError``;
    Ray Data's ``UserCodeException`` around it says no more than "UDF failed"), so the
    first exception line that is not Ray's own is taken from that text: a WikivelError's
    message as it is, any other error with its class name.

    :param exc: what ``iter_batches`` raised. :param files_read: how far the run got.
    """
    texts: List[str] = []
    seen: BaseException | None = exc
    for _ in range(8):  # the chain is short; a bound keeps a cyclic one finite
        if seen is None:
            break
        texts.append(_ANSI.sub("", str(seen)))
        seen = getattr(seen, "cause", None) or seen.__cause__
    found = ""
    for line in (line for text in texts for line in text.splitlines()):
        match = _EXCEPTION_LINE.match(line.strip())
        if match and not match.group(1).startswith("ray."):
            name, message = match.groups()
            found = message if name.startswith("wikivel_bot.") else f"{name.rsplit('.', 1)[-1]}: {message}"
            break
    if not found:  # Ray's own failure (a dead worker, a lost object): its first line says what
        found = next((line.strip() for text in texts for line in text.splitlines() if line.strip()),
                     type(exc).__name__)
    return WikivelError(f"backfill stopped after {files_read} files: {found} "
                        f"(run again with the same --run-name to resume; -v shows Ray's logs)")
