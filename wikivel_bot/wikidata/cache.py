"""A bounded cache: at most ``max_items`` entries, each kept at most ``ttl_s`` seconds.

A review session shows the same items over and over, and Wikidata's API etiquette asks tools
not to ask twice; but a long-running process must neither grow without end (the size bound,
least recently used dropped first) nor show an item edited on Wikidata yesterday as it was
last week (the expiry). Thread-safe: the web app serves requests from several threads.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from typing import Callable, Generic, Hashable, Optional, Tuple, TypeVar

V = TypeVar("V")


class BoundedCache(Generic[V]):
    """An LRU cache with an expiry per entry.

    :param max_items: entries kept (0 keeps none).
    :param ttl_s: seconds an entry stays valid after it was stored.
    :param clock: ``time.monotonic``; tests pass one they move.
    """

    def __init__(self, max_items: int, ttl_s: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.max_items = max(0, int(max_items))
        self.ttl_s = float(ttl_s)
        self._clock = clock
        self._lock = threading.Lock()
        self._entries: "OrderedDict[Hashable, Tuple[float, V]]" = OrderedDict()

    def lookup(self, key: Hashable) -> Tuple[bool, Optional[V]]:
        """(True, value) for a live entry (now the most recently used), else (False, None).

        A cached value may itself be None (e.g. "this item does not exist"), hence the flag.
        """
        with self._lock:
            entry = self._entries.get(key)
            if entry is None:
                return False, None
            if entry[0] <= self._clock():
                del self._entries[key]
                return False, None
            self._entries.move_to_end(key)
            return True, entry[1]

    def put(self, key: Hashable, value: V) -> None:
        """Store ``value``; the least recently used entries go when the cache is full."""
        if not self.max_items:
            return
        with self._lock:
            self._entries[key] = (self._clock() + self.ttl_s, value)
            self._entries.move_to_end(key)
            while len(self._entries) > self.max_items:
                self._entries.popitem(last=False)

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)
