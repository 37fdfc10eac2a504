"""Leases: those of processes that no longer exist, freed at once instead of after the lease,
and the work in progress of this one, the only rows it renews.

Workers are named ``<stage>:<host>:<pid>`` (``cli.poll.worker_name``, the daemon). When a
writer is killed (kill -9, OOM, a power cut) its claims would sit until their lease expires,
while ``write`` reports "0 claimed". A new worker on the same host can tell for sure that such
a process is gone, and gives its claims back. Claims of other hosts are left to their lease:
from here we cannot know whether that process still runs.
"""

from __future__ import annotations

import os
import socket
import threading
from typing import Any, Callable, Dict, Iterable, List, Optional, Set, Tuple, TypeVar

T = TypeVar("T")


def local_pid(worker: str, host: Optional[str] = None) -> Optional[int]:
    """The pid in a ``stage:host:pid`` worker name when ``host`` is this machine, else None."""
    parts = worker.rsplit(":", 2)
    if len(parts) != 3 or not parts[2].isdigit():
        return None
    if parts[1] != (host or socket.gethostname()):
        return None
    return int(parts[2])


def process_alive(pid: int) -> bool:
    """Whether a process with this pid exists (signal 0 probes without sending anything)."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # it exists, it is just not ours
    return True


def dead_local_workers(workers: Iterable[str]) -> List[str]:
    """The workers among ``workers`` that ran on this host and whose process is gone."""
    dead = []
    for worker in dict.fromkeys(workers):
        pid = local_pid(worker)
        if pid is not None and pid != os.getpid() and not process_alive(pid):
            dead.append(worker)
    return dead


def free_dead_local_claims(store: Any) -> Dict[str, int]:
    """Release every claim of a dead local worker; {worker: rows freed}."""
    freed = {}
    for worker in dead_local_workers(c["worker"] for c in store.claims()):
        freed[worker] = store.release_claims_of(worker)
    return freed


class WorkInProgress:
    """The rows this process's running stages claimed, by id: what its heartbeat renews.

    A stage runs through :meth:`run` with a view of the store that notes what it claims; when
    the stage returns, its rows are no longer in progress. A row it left claimed on purpose
    (a deferred file: the lease is its back-off) or failed to release then expires.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._running: List[_Claiming] = []

    def run(self, store: Any, stage: Callable[[Any], T]) -> T:
        """``stage(view)``, where ``view`` is ``store`` noting the rows claimed through it."""
        view = _Claiming(store, self._lock)
        with self._lock:
            self._running.append(view)
        try:
            return stage(view)
        finally:
            with self._lock:
                self._running.remove(view)

    def ids(self) -> Tuple[List[int], List[int]]:
        """(file ids, candidate ids) claimed by the stages running now."""
        with self._lock:
            return (sorted({i for v in self._running for i in v.file_ids}),
                    sorted({i for v in self._running for i in v.candidate_ids}))

    def renew(self, store: Any, worker: str) -> int:
        """Renew the leases of the work in progress (no database call when there is none)."""
        file_ids, candidate_ids = self.ids()
        return int(store.renew_claims(worker, file_ids=file_ids, candidate_ids=candidate_ids))


class _Claiming:
    """A store as one stage sees it: the same store, noting the rows claimed through it."""

    def __init__(self, store: Any, lock: threading.Lock) -> None:
        self._store = store
        self._lock = lock
        self.file_ids: Set[int] = set()
        self.candidate_ids: Set[int] = set()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)

    def claim_files(self, *args: Any, **kwargs: Any) -> Any:
        works = self._store.claim_files(*args, **kwargs)
        with self._lock:
            self.file_ids.update(w.id for w in works)
        return works

    def claim_approved(self, *args: Any, **kwargs: Any) -> Any:
        edits = self._store.claim_approved(*args, **kwargs)
        with self._lock:
            self.candidate_ids.update(e.candidate_id for e in edits)
        return edits
