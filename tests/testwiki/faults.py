"""Fault injection: make chosen requests fail the way Wikimedia fails.

A fault names a request *kind* and an *error*; it fires for the next
``times`` matching requests (``times=None`` = until removed).  Kinds:

* an API action (``wbsetclaim``, ``wbgetentities``, ``login``, ``query`` …),
* a query module (``logevents``, ``imageinfo``, ``revisions``, ``tokens`` …),
* ``write`` = any write action, ``api`` / ``*`` = any API request,
* ``thumb`` = thumbnail requests, ``original`` = original file downloads.

Errors: ``maxlag`` (only fires for requests that sent ``maxlag``, as in
MediaWiki), ``http500``, ``http503``, ``timeout`` (sleep ``seconds``, then
answer), ``ratelimited``, ``badtoken``, ``editconflict``, ``delete_file``
(delete ``title`` just before answering: "deleted between poll and fetch"),
``readonly``, ``http429`` and ``hold_response`` (run the request normally, then
hold the answer ``seconds`` before sending it: "the write was applied but the
client never heard back", e.g. to kill a client between the API's success
and its own commit).
"""
from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

ERRORS = frozenset({'maxlag', 'http500', 'http503', 'http429', 'timeout',
                    'ratelimited', 'badtoken', 'editconflict', 'delete_file',
                    'readonly', 'hold_response'})


@dataclass
class Fault:
    """One injected fault."""

    kind: str
    error: str
    times: int | None = 1
    title: str | None = None          # only requests naming this title
    lag: float = 7.0                  # maxlag: reported lag (seconds)
    retry_after: int | None = None    # override the Retry-After header
    seconds: float = 30.0             # timeout: how long to stall
    params: dict[str, str] = field(default_factory=dict)
    fired: int = 0
    id: int = 0

    def to_json(self) -> dict[str, Any]:
        """JSON form for the control endpoint."""
        return {'id': self.id, 'kind': self.kind, 'error': self.error,
                'times': self.times, 'title': self.title, 'fired': self.fired}


class FaultRegistry:
    """Thread-safe list of pending faults."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._faults: list[Fault] = []
        self._next_id = 1

    def add(self, kind: str, error: str, times: int | None = 1, *,
            title: str | None = None, lag: float = 7.0,
            retry_after: int | None = None, seconds: float = 30.0,
            params: dict[str, str] | None = None) -> Fault:
        """Inject a fault; return it (``fault.fired`` counts hits)."""
        if error not in ERRORS:
            raise ValueError(f'unknown fault {error!r}; one of {sorted(ERRORS)}')
        with self._lock:
            fault = Fault(kind=kind, error=error, times=times, title=title,
                          lag=lag, retry_after=retry_after, seconds=seconds,
                          params=dict(params or {}), id=self._next_id)
            self._next_id += 1
            self._faults.append(fault)
            return fault

    def clear(self) -> None:
        """Remove all pending faults."""
        with self._lock:
            self._faults.clear()

    def remove(self, fault: Fault) -> None:
        """Remove one fault."""
        with self._lock:
            if fault in self._faults:
                self._faults.remove(fault)

    def pending(self) -> list[Fault]:
        """Faults that may still fire."""
        with self._lock:
            return list(self._faults)

    def take(self, kinds: set[str], params: dict[str, str],
             titles: set[str]) -> Fault | None:
        """Return (and count) the first fault matching this request."""
        with self._lock:
            for fault in self._faults:
                if fault.kind not in kinds:
                    continue
                if fault.title is not None and fault.title not in titles:
                    continue
                if any(params.get(k) != v for k, v in fault.params.items()):
                    continue
                # MediaWiki only refuses for lag when the client asked for a
                # maxlag limit below the current lag.
                if fault.error == 'maxlag':
                    try:
                        limit = float(params['maxlag'])
                    except (KeyError, ValueError):
                        continue
                    if fault.lag <= limit:
                        continue
                fault.fired += 1
                if fault.times is not None and fault.fired >= fault.times:
                    self._faults.remove(fault)
                return fault
            return None
