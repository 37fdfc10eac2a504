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

A ``timeout`` or ``hold_response`` stall ends after ``seconds``, at server
stop, or when the test calls :meth:`Fault.release` (``POST
/_control/faults/release``): a test that must act while an answer is held
waits for ``fault.holding`` and releases the answer itself, so the order is
fixed by events and ``seconds`` only guards against a hang.
"""
from __future__ import annotations

import threading
import time
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
    # set when a stall begins; a set ``released`` ends it early
    holding: threading.Event = field(default_factory=threading.Event,
                                     repr=False, compare=False)
    released: threading.Event = field(default_factory=threading.Event,
                                      repr=False, compare=False)

    def to_json(self) -> dict[str, Any]:
        """JSON form for the control endpoint."""
        return {'id': self.id, 'kind': self.kind, 'error': self.error,
                'times': self.times, 'title': self.title, 'fired': self.fired,
                'holding': self.holding.is_set()}

    def matches(self, kinds: set[str], params: dict[str, str],
                titles: set[str]) -> bool:
        """Whether a request of these kinds, params and titles meets this fault."""
        if self.kind not in kinds:
            return False
        if self.title is not None and self.title not in titles:
            return False
        if any(params.get(k) != v for k, v in self.params.items()):
            return False
        # MediaWiki only refuses for lag when the client asked for a maxlag
        # limit below the current lag.
        if self.error == 'maxlag':
            try:
                return self.lag > float(params['maxlag'])
            except (KeyError, ValueError):
                return False
        return True

    def release(self) -> None:
        """End this fault's stalls now (and let later matches pass at once)."""
        self.released.set()

    def stall(self, stopping: threading.Event) -> None:
        """Wait ``seconds``, or until :meth:`release` or the wiki stops."""
        self.holding.set()
        end = time.monotonic() + self.seconds
        while not (self.released.is_set() or stopping.is_set()):
            left = end - time.monotonic()
            if left <= 0:
                return
            # the wiki's stop is a second event: look at it every 50 ms
            self.released.wait(min(left, 0.05))


class FaultRegistry:
    """Thread-safe list of pending faults."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._faults: list[Fault] = []
        self._by_id: dict[int, Fault] = {}   # fired ones too, for release()
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
            self._by_id[fault.id] = fault
            return fault

    def release(self, fault_id: int) -> Fault:
        """Release the stalls of fault ``fault_id`` (see :meth:`Fault.release`)."""
        with self._lock:
            fault = self._by_id[fault_id]
        fault.release()
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
                if not fault.matches(kinds, params, titles):
                    continue
                fault.fired += 1
                if fault.times is not None and fault.fired >= fault.times:
                    self._faults.remove(fault)
                return fault
            return None
