"""One download budget for the whole cluster: Wikimedia's robot policy for media.

upload.wikimedia.org asks robots for a total concurrency of at most 2 and at most 25 Mbit/s
(averaged over 10 s), a User-Agent with contact details, and to back off on 429 with
``Retry-After``; on Toolforge those limits are not enforced. However many Ray tasks download
thumbnails on however many nodes, they all take a slot from one :class:`DownloadBudget`
(a Ray actor): slots bound the concurrency, a token bucket charged with each download's bytes
bounds the bandwidth, and a ``Retry-After`` one task receives pauses every task.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any, Callable, Dict, Optional

# Token bucket depth in seconds of the allowed rate: short, so that the average over any
# 10 s window stays under the limit even after an idle spell.
BURST_S = 1.0
# A slot not given back within this time (a worker that died holding it) is reclaimed.
SLOT_TIMEOUT_S = 600.0


class DownloadBudget:
    """Slots, bandwidth and pauses shared by every download of a run (a Ray async actor).

    :param connections: downloads in flight at once, cluster-wide.
    :param mbps: megabits per second, cluster-wide; 0 = no bandwidth limit.
    """

    def __init__(self, connections: int, mbps: float) -> None:
        self.connections = max(1, int(connections))
        self.rate = mbps * 1_000_000 / 8 if mbps > 0 else 0.0  # bytes per second
        self.tokens = self.rate * BURST_S
        self.refilled = time.monotonic()
        self.paused_until = 0.0
        self.holders: Dict[int, float] = {}  # slot ticket -> when taken
        self.next_ticket = 0
        self.stats = {"downloads": 0, "bytes": 0, "max_in_flight": 0, "pauses": 0, "paused_s": 0.0}
        self._free: Optional[asyncio.Condition] = None

    async def acquire(self) -> int:
        """Wait for a slot, for any pause to end and for the bandwidth debt to be paid; a ticket."""
        if self._free is None:
            self._free = asyncio.Condition()
        async with self._free:
            while True:
                self._reclaim()
                if len(self.holders) < self.connections:
                    break
                await self._wait()
            ticket = self.next_ticket
            self.next_ticket += 1
            self.holders[ticket] = time.monotonic()
            self.stats["max_in_flight"] = max(self.stats["max_in_flight"], len(self.holders))
        while True:
            now = time.monotonic()
            wait = max(self.paused_until - now, self._debt_wait(now))
            if wait <= 0:
                return ticket
            await asyncio.sleep(wait)

    async def release(self, ticket: int, nbytes: int) -> None:
        """Give the slot back and charge the bytes downloaded."""
        self._refill(time.monotonic())
        self.tokens -= max(0, int(nbytes))
        self.stats["downloads"] += 1
        self.stats["bytes"] += max(0, int(nbytes))
        if self._free is None:
            self._free = asyncio.Condition()
        async with self._free:
            self.holders.pop(ticket, None)
            self._free.notify_all()

    def pause(self, seconds: float) -> None:
        """The media server said to wait (429 ``Retry-After`` or a back-off): nobody starts a
        download before ``seconds`` from now."""
        until = time.monotonic() + max(0.0, float(seconds))
        if until > self.paused_until:
            self.stats["pauses"] += 1
            self.stats["paused_s"] += until - max(self.paused_until, time.monotonic())
            self.paused_until = until

    def report(self) -> Dict[str, Any]:
        return dict(self.stats)

    # -- helpers -------------------------------------------------------------------------

    async def _wait(self) -> None:
        assert self._free is not None
        try:
            await asyncio.wait_for(self._free.wait(), timeout=5.0)
        except asyncio.TimeoutError:
            pass  # look for dead holders again

    def _reclaim(self) -> None:
        stale = time.monotonic() - SLOT_TIMEOUT_S
        for ticket in [t for t, at in self.holders.items() if at < stale]:
            del self.holders[ticket]

    def _refill(self, now: float) -> None:
        if self.rate:
            self.tokens = min(self.rate * BURST_S, self.tokens + (now - self.refilled) * self.rate)
        self.refilled = now

    def _debt_wait(self, now: float) -> float:
        if not self.rate:
            return 0.0
        self._refill(now)
        return -self.tokens / self.rate if self.tokens < 0 else 0.0


def budget_sleep(budget: Any) -> Callable[[float], None]:
    """A ``sleep`` for :class:`~wikivel_bot.commons.thumbnails.ThumbnailClient`: the client's
    waits (Retry-After, back-off) are reported to ``budget`` first, so one rate-limited task
    pauses the whole cluster rather than only itself."""
    import ray

    def sleep(seconds: float) -> None:
        ray.get(budget.pause.remote(seconds))
        time.sleep(seconds)

    return sleep


def budgeted_get(budget: Any, client: Any) -> Callable[[str], bytes]:
    """``client.get`` under ``budget`` (a Ray actor handle of :class:`DownloadBudget`)."""
    import ray

    def get(url: str) -> bytes:
        ticket = ray.get(budget.acquire.remote())
        size = 0
        try:
            data = client.get(url)
            size = len(data)
            return bytes(data)
        finally:
            ray.get(budget.release.remote(ticket, size))

    return get
