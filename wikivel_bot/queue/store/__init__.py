"""The queue store: the only code that reads and writes the queue tables.

Every state change goes through a method here that checks the move against
``core.states`` inside the same transaction as the change, so two processes racing on a row
cannot both move it. Work is handed out by *claiming*: rows get a lease (worker name and
time) inside a locking transaction — ``SELECT … FOR UPDATE SKIP LOCKED`` on PostgreSQL and
MariaDB, ``BEGIN IMMEDIATE`` on SQLite — so no two workers ever get the same row, and a
crashed worker's rows come back once its lease has expired.

:class:`Store` is one class to its callers, written as one mixin per concern so each can be
read on its own:

* ``base`` — the engine, transactions, dialect helpers (locking reads, insert-or-ignore,
  lease conditions) and the checks several concerns share;
* ``files`` — enqueueing uploads, claiming and releasing files, ``mark_*``;
* ``linking`` — saving a file's candidates, and the backfill's ``settle_files``
  (with :class:`FileOutcome`);
* ``decisions`` — reviewers' decisions, their undo, ``rejected_items``;
* ``claims`` — claiming approved pairs, confirming, renewing and releasing leases;
* ``writes`` — recording write outcomes, the audit trail;
* ``sends`` — every write request noted before it leaves, settled by its answer or a
  re-read (a request without an answer may land late);
* ``follow_ups`` — statements a decision made after their edit left no longer wants as they
  are (removed again, or their rank changed), with :class:`FollowUp`;
* ``cursors`` — poll cursors and per-state counts;
* ``evidence_cache`` — what a category, link or identifier resolved to, until it expires.

The mixins import only ``base``, never this module, so the imports have no cycle.
"""

from __future__ import annotations

from wikivel_bot.queue.store.claims import ClaimsMixin
from wikivel_bot.queue.store.cursors import CursorsMixin
from wikivel_bot.queue.store.decisions import DecisionsMixin
from wikivel_bot.queue.store.evidence_cache import EvidenceCacheMixin
from wikivel_bot.queue.store.files import FilesMixin
from wikivel_bot.queue.store.follow_ups import FollowUp, FollowUpsMixin
from wikivel_bot.queue.store.linking import FileOutcome, LinkingMixin
from wikivel_bot.queue.store.sends import SendsMixin, UnsettledSend
from wikivel_bot.queue.store.writes import WritesMixin

# Names callers import from here; FileOutcome lives in linking.py.
__all__ = ["FileOutcome", "FollowUp", "Store", "UnsettledSend"]


class Store(FilesMixin, LinkingMixin, DecisionsMixin, ClaimsMixin, SendsMixin, WritesMixin, FollowUpsMixin,
            CursorsMixin, EvidenceCacheMixin):
    """The queue on one database. Safe to share between threads of one process.

    ``Store(engine, claim_lease_s=900, clock=utcnow)``: see
    :meth:`~wikivel_bot.queue.store.base.StoreBase.__init__`.
    """
