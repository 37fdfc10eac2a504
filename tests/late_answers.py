"""A short pywikibot read timeout for the requests the test wiki holds, and for no other.

pywikibot applies ``config.socket_timeout`` to every request. A test that needs a read
timeout to fire (the wiki holds an answer: ``hold_response``, ``timeout``) must not shrink it
for every request: on a loaded machine an ordinary read or edit can take longer than half a
second, time out too and be resent, and the test passes or fails by timing luck.
:func:`short_read_timeout_for` gives the short limit only to requests that meet the fault
(the wiki's own matching, so kind, title and params agree with what it holds) and, for a
fault of ``times=n``, only to the first ``n`` of them, and none once the test released the
fault (:meth:`~tests.testwiki.faults.Fault.release`); every other request waits up to
:data:`OTHER_READ_S`, a guard against a hang, never an expected outcome.
"""

from __future__ import annotations

import time
from typing import Any, Callable, Dict
from urllib.parse import parse_qsl, urlsplit

import pytest

from tests.testwiki.dispatch import request_kinds, request_titles
from tests.testwiki.faults import Fault

SHORT_READ_S = 0.5
OTHER_READ_S = 120.0
HANG_GUARD_S = 120  # only a guard against a hang: every wait is for an event


@pytest.fixture
def fast_retries(monkeypatch: pytest.MonkeyPatch) -> None:
    """pywikibot gives up after one retry and does not wait (its own backoff is not ours)."""
    from pywikibot import config

    monkeypatch.setattr(config, "max_retries", 1)
    monkeypatch.setattr(config, "retry_wait", 0)
    monkeypatch.setattr(config, "retry_max", 0)


def wait_for(condition: Callable[[], Any]) -> None:
    """Wait until the wiki's own thread made ``condition`` true (a hang guard, no timing)."""
    deadline = time.monotonic() + HANG_GUARD_S
    while not condition():
        assert time.monotonic() < deadline, "the test wiki never got there"
        time.sleep(0.02)


def _params(url: str, data: Any) -> Dict[str, str]:
    """The API parameters of one request, from its query string and its form body."""
    params = dict(parse_qsl(urlsplit(url).query))
    if isinstance(data, dict):
        params.update({str(k): str(v) for k, v in data.items()})
    elif isinstance(data, (str, bytes)):
        try:
            text = data.decode() if isinstance(data, bytes) else data
        except UnicodeDecodeError:
            return params  # a multipart upload: no fault here is about those
        params.update(parse_qsl(text))
    return params


def short_read_timeout_for(monkeypatch: pytest.MonkeyPatch, fault: Fault,
                           read_s: float = SHORT_READ_S) -> None:
    """pywikibot gives up after ``read_s`` on the requests ``fault`` holds, only on those."""
    from pywikibot import config
    from pywikibot.comms import http

    connect_s = 30.0
    monkeypatch.setattr(config, "socket_timeout", (connect_s, OTHER_READ_S))
    original = http.session.request
    shortened = [0]

    def request(method: str, url: str, *args: Any, **kwargs: Any) -> Any:
        params = _params(url, kwargs.get("data"))
        holding = not fault.released.is_set() and (fault.times is None or shortened[0] < fault.times)
        if holding and fault.matches(request_kinds(params), params, request_titles(params)):
            shortened[0] += 1
            kwargs["timeout"] = (connect_s, read_s)
        return original(method, url, *args, **kwargs)

    monkeypatch.setattr(http.session, "request", request)
