"""The evidence cache: what a category, link or identifier resolved to, until it expires.

Part of :class:`~wikivel_bot.queue.store.Store` (a mixin over
:class:`~wikivel_bot.queue.store.base.StoreBase`). The resolver
(``wikivel_bot.commons.evidence.EvidenceResolver``) asks :meth:`EvidenceCacheMixin.get_cached`
before it sends a request and saves what it learned with
:meth:`EvidenceCacheMixin.put_cached`, so a category shared by 10,000 uploads is looked up
once per expiry. ``None`` is an answer too ("this category names no item") and is cached
like an item. Nothing here touches the state machine.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Dict, Iterable, Mapping, Optional

from sqlalchemy import select

from wikivel_bot.queue.rows import to_db_time
from wikivel_bot.queue.store.base import StoreBase
from wikivel_bot.queue.tables import EVIDENCE_KEY_LENGTH, evidence_cache

# Keys per IN (...) list: well below every backend's limit on bound parameters.
_CHUNK = 500


class EvidenceCacheMixin(StoreBase):
    """Cached evidence look-ups (see the module docstring)."""

    def get_cached(self, keys: Iterable[str], now: datetime) -> Dict[str, Optional[str]]:
        """{key: item or None} for the keys that have an entry not yet expired at ``now``;
        keys without one (never asked, or expired) are absent.

        :param keys: reference keys such as ``category:Eiffel Tower``.
        :param now: the time to compare expiries with (aware, or naive UTC).
        """
        wanted = [k for k in dict.fromkeys(keys) if len(k) <= EVIDENCE_KEY_LENGTH]
        cutoff = to_db_time(now)
        found: Dict[str, Optional[str]] = {}
        with self.reading() as conn:
            for start in range(0, len(wanted), _CHUNK):
                chunk = wanted[start:start + _CHUNK]
                query = select(evidence_cache.c.key, evidence_cache.c.qid).where(
                    evidence_cache.c.key.in_(chunk), evidence_cache.c.expires_at > cutoff)
                found.update((row.key, row.qid) for row in conn.execute(query))
        return found

    def put_cached(self, rows: Mapping[str, Optional[str]], expires_at: datetime) -> int:
        """Save {key: item or None}, replacing what a key held; returns the rows written.

        A key longer than the column (:data:`EVIDENCE_KEY_LENGTH`) is not cached: it is
        resolved again next time, which costs a request, never a wrong answer.
        """
        values = [{"key": k, "qid": q, "expires_at": to_db_time(expires_at)}
                  for k, q in rows.items() if len(k) <= EVIDENCE_KEY_LENGTH]
        if not values:
            return 0
        with self.transaction() as conn:
            for start in range(0, len(values), _CHUNK):
                conn.execute(self._upsert(), values[start:start + _CHUNK])
        return len(values)

    def _upsert(self) -> Any:
        """An INSERT that overwrites the key's row when there is one (an expired entry, or
        one another resolver saved meanwhile: both hold an answer as fresh as ours)."""
        if self.backend == "postgresql":
            from sqlalchemy.dialects.postgresql import insert as pg_insert

            pg = pg_insert(evidence_cache)
            return pg.on_conflict_do_update(index_elements=[evidence_cache.c.key],
                                            set_={"qid": pg.excluded.qid, "expires_at": pg.excluded.expires_at})
        if self.backend == "sqlite":
            from sqlalchemy.dialects.sqlite import insert as sqlite_insert

            lite = sqlite_insert(evidence_cache)
            return lite.on_conflict_do_update(index_elements=[evidence_cache.c.key],
                                              set_={"qid": lite.excluded.qid, "expires_at": lite.excluded.expires_at})
        from sqlalchemy.dialects.mysql import insert as mysql_insert

        my = mysql_insert(evidence_cache)
        return my.on_duplicate_key_update(qid=my.inserted.qid, expires_at=my.inserted.expires_at)
